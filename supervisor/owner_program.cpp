#include "supervisor/owner_program.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/cloexec.h"
#include "common/log.h"
#include "supervisor/spawn.h"
#include "supervisor/stderr_log.h"
#include "supervisor/supervisor.h"

namespace pine {

void makeOwnerFolder(const std::string& path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at < path.size() && path[at] != '/') continue;
    std::string part = path.substr(0, at);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::runtime_error("cannot create " + part + ": " + strerror(errno));
  }
}

StartedProgram startOwnerProgram(Supervisor& sup, kj::AsyncIoContext& io, const OwnerProgram& p) {
  if (p.argv.empty() || p.argv[0].empty() || p.argv[0][0] != '/')
    throw std::runtime_error("the program must be an absolute path");
  makeOwnerFolder(p.dir);

  int sv[2], err[2];
  if (socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    throw std::runtime_error(std::string("socketpair: ") + strerror(errno));
  kj::AutoCloseFd brokerEnd(sv[0]), programEnd(sv[1]);
  if (pipeCloexec(err) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  kj::AutoCloseFd errRead(err[0]), errWrite(err[1]);

  SpawnSpec spec;
  spec.program = p.argv[0];
  spec.args = p.argv;
  // Nothing of pined's environment: a path to find tools, its folder as HOME, then what the caller adds.
  spec.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + p.dir, "LANG=C.UTF-8"};
  spec.env.insert(spec.env.end(), p.env.begin(), p.env.end());
  spec.stdinFd = programEnd.get();
  spec.stdoutFd = programEnd.get();
  spec.stderrFd = errWrite.get();
  spec.cwd = p.dir;
  spec.label = p.role + " " + p.name;
  pid_t pid = spawnChild(spec);  // the owner's program, unconfined by design (seed layer 6)
  programEnd = nullptr;
  errWrite = nullptr;
  audit("process.start", {{"process", p.role}, {"process_pid", pid}, {p.role == "source" ? "source" : "server", p.name},
                          {"program", p.argv[0]}});
  spdlog::info("{} '{}': started {} (pid {})", p.role, p.name, p.argv[0], pid);
  auto exit = sup.adoptSourceProgram(pid, p.name, p.role);
  auto in = io.lowLevelProvider->wrapInputFd(errRead.release(), kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP);
  std::string label = (p.role == "source" ? "source program '" : "MCP server '") + p.name + "'";
  auto log = logStderrLines(kj::mv(in), label).eagerlyEvaluate([label](kj::Exception&& e) {
    spdlog::warn("{}: its stderr: {}", label, e.getDescription().cStr());
  });
  return StartedProgram{pid, brokerEnd.release(), kj::mv(exit), kj::mv(log)};
}

}  // namespace pine
