// Starting one of the owner's programs with pine's rights (the seed's layer 6: no sandbox): a
// source program or a local MCP server. pined execs it with a minimal environment in its own
// folder under pine's home; its stdin and stdout are one end of a socketpair whose other end
// goes to the broker; its stderr goes to pined's log, line by line, capped. The child is reaped,
// listed and audited under `role`, and killed with the broker that asked for it and at shutdown.
#pragma once
#include <kj/async-io.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace pine {

class Supervisor;

struct StartedProgram {
  pid_t pid;
  int brokerEnd;                // the broker's end of the program's stdin and stdout; the caller owns it
  kj::ForkedPromise<int> exit;  // the wait status, once reaped
  kj::Promise<void> stderrLog;  // copies its stderr to the log until it closes
};

struct OwnerProgram {
  std::vector<std::string> argv;  // argv[0]: the program, absolute
  std::vector<std::string> env;   // NAME=value, added after PATH, HOME and LANG
  std::string dir;                // its folder (created, mode 700): HOME and working directory
  std::string role;               // "source" or "mcp": how pined lists and kills it
  std::string name;               // the source, or "<agent>/<server>", for the log and the audit
};

// Throws std::runtime_error saying why the program could not be started.
StartedProgram startOwnerProgram(Supervisor& sup, kj::AsyncIoContext& io, const OwnerProgram& p);

// mkdir -p with mode 700 for the folders it creates; throws saying which one failed.
void makeOwnerFolder(const std::string& path);

}  // namespace pine
