#include "tests/egress/egress_fixture.h"

#include <capnp/serialize.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/sanitizer_env.h"
#include "common/fd.h"
#include "proto/egress.capnp.h"
#include "supervisor/egress_call.h"
#include "supervisor/spawn.h"
#include "common/cloexec.h"

namespace pine::egress::test {
namespace {

struct TlsOwner {
  Tls t;
  TlsOwner() {
    signal(SIGPIPE, SIG_IGN);
    char tmpl[] = "/tmp/pine-egress-fixture-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp");
    t.dir = tmpl;
    t.ca = makeCa("pine test CA");
    t.server = makeServerCert(t.ca);
    t.caFile = t.dir + "/ca.pem";
    writePem(t.caFile, t.ca.cert.get());
    std::ifstream in(t.caFile);
    std::stringstream ss;
    ss << in.rdbuf();
    t.caPem = ss.str();
  }
  ~TlsOwner() {
    std::error_code ec;
    std::filesystem::remove_all(t.dir, ec);
  }
};

}  // namespace

const Tls& tls() {
  static TlsOwner owner;
  return owner.t;
}

std::string programPath(const std::string& name) {
  const char* dir = std::getenv("PINE_BIN_DIR");
  if (dir == nullptr) throw std::runtime_error("PINE_BIN_DIR is not set (run through meson test, or set it)");
  return std::string(dir) + "/" + name;
}

ProgramRun runProgram(const std::string& program, const std::string& job, const sandbox::PreparedSandbox* box,
                      bool closeAfter) {
  int sv[2];
  if (pine::socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) != 0) throw std::runtime_error("socketpair");
  SpawnSpec spec;
  spec.program = program;
  spec.args = {program};
  spec.env = {"LANG=C.UTF-8"};
  for (auto& e : pine::sanitizerEnvironment(true)) spec.env.push_back(e);
  spec.fd3 = sv[1];
  spec.sandbox = box ? box->linuxPlan.get() : nullptr;
  spec.launcher = programPath("pine-launch");
  pid_t pid = spawnChild(spec);
  close(sv[1]);
  ProgramRun run;
  if (!writeAll(sv[0], job.data(), job.size())) throw std::runtime_error("the egress process did not take its job");
  if (closeAfter) shutdown(sv[0], SHUT_WR);
  try {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = (2u << 20) / sizeof(capnp::word);
    for (;;) {
      // End of stream at a message boundary is the process ending.
      char probe;
      if (recv(sv[0], &probe, 1, MSG_PEEK) <= 0) break;
      capnp::StreamFdMessageReader reader(sv[0], options);
      auto frame = reader.getRoot<proto::egress::EgressFrame>();
      if (frame.isHead()) {
        run.sawHead = true;
        run.status = frame.getHead().getStatus();
        for (auto h : frame.getHead().getHeaders()) run.headers.emplace_back(h.getName(), h.getValue());
      } else if (frame.isChunk()) {
        ++run.chunks;
        run.body.append(reinterpret_cast<const char*>(frame.getChunk().begin()), frame.getChunk().size());
      } else if (frame.isError()) {
        run.error = frame.getError();
      } else if (frame.isDone()) {
        run.done = true;
      }
    }
  } catch (const kj::Exception&) {
    // a cut frame: `done` stays false
  }
  close(sv[0]);
  while (waitpid(pid, &run.wait, 0) < 0 && errno == EINTR) {
  }
  return run;
}

sandbox::PreparedSandbox egressPlanFor(const std::string& program, const std::string& home) {
  static const auto host = sandbox::makeSandboxHost(sandbox::Backend::Linux);
  return egressSandbox(program, home, *host);
}

}  // namespace pine::egress::test
