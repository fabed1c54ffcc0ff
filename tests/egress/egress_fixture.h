// What the egress tests share: a test CA and server certificate made once per run, and a
// way to run the real pine-egress program on a job and collect the frames it answers with.
#pragma once
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "sandbox/sandbox_host.h"
#include "tests/egress/test_server.h"

namespace pine::egress::test {

struct Tls {
  std::string dir;  // a temporary folder, removed at exit
  Identity ca, server;
  std::string caFile, caPem;
};
const Tls& tls();  // made on first use

std::string programPath(const std::string& name);  // PINE_BIN_DIR/<name>

struct ProgramRun {
  int wait = -1;      // waitpid status
  bool done = false;  // a done frame came
  bool sawHead = false;
  long status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body, error;
  std::size_t chunks = 0;
};

// Starts `program` (pine-egress) with fd 3 on a socketpair, in `box` (its Linux plan) when given, writes
// `job` to it (and closes our side for writing when `closeAfter`), reads EgressFrames
// until done or end of stream, and reaps it.
ProgramRun runProgram(const std::string& program, const std::string& job, const sandbox::PreparedSandbox* box,
                      bool closeAfter = false);

// The sandbox pined gives pine-egress (here: `program`), for a pine home at `home`.
sandbox::PreparedSandbox egressPlanFor(const std::string& program, const std::string& home);

}  // namespace pine::egress::test
