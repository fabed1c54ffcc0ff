#include "supervisor/source_program.h"

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
#include "supervisor/supervisor.h"

namespace pine {
namespace {

constexpr size_t kStderrLineBytes = 1000;  // a longer line is cut: the log is not the program's to fill

kj::Promise<void> logLines(kj::Own<kj::AsyncInputStream> in, std::string source, std::string pending) {
  auto buf = kj::heapArray<char>(4096);
  auto read = in->tryRead(buf.begin(), 1, buf.size());
  return read.then([in = kj::mv(in), buf = kj::mv(buf), source = kj::mv(source),
                    pending = kj::mv(pending)](size_t n) mutable -> kj::Promise<void> {
    if (n == 0) {
      if (!pending.empty()) spdlog::info("source program '{}': {}", source, pending);
      return kj::READY_NOW;
    }
    for (size_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        spdlog::info("source program '{}': {}", source, pending);
        pending.clear();
      } else if (pending.size() < kStderrLineBytes) {
        pending += buf[i];
      }
    }
    return logLines(kj::mv(in), kj::mv(source), kj::mv(pending));
  });
}

}  // namespace

std::string sourceProgramPath(const config::Home& cfg, const std::string& home, const std::string& source,
                              std::string& error) {
  const config::Source* s = nullptr;
  for (const auto& c : cfg.pine.sources)
    if (c.name == source) s = &c;
  if (!s) {
    error = "no source '" + source + "' in pine.yaml";
    return "";
  }
  std::string file = s->use;
  if (file.empty())
    for (const auto& t : cfg.pine.sourceTypes)
      if (t.name == s->type) file = t.file;
  if (file.empty()) {
    error = "source '" + source + "' runs no program (no 'use', and type '" + s->type + "' is not a sourceTypes entry)";
    return "";
  }
  return file[0] == '/' ? file : home + "/" + file;
}

StartedProgram startSourceProgram(Supervisor& sup, kj::AsyncIoContext& io, const std::string& source) {
  auto cfg = sup.config();
  if (!cfg) throw std::runtime_error("no configuration is loaded");
  std::string error;
  std::string program = sourceProgramPath(*cfg, sup.home().root, source, error);
  if (program.empty()) throw std::runtime_error(error);
  // Its own folder in pine's home, for whatever it keeps between runs: outside data/, which the
  // broker may write, so that nothing the broker leaves there steers a program with pine's rights.
  std::string dir = sup.home().root + "/source-data";
  mkdir(dir.c_str(), 0700);
  dir += "/" + source;
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create " + dir + ": " + strerror(errno));

  int sv[2], err[2];
  if (socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
    throw std::runtime_error(std::string("socketpair: ") + strerror(errno));
  kj::AutoCloseFd brokerEnd(sv[0]), programEnd(sv[1]);
  if (pipeCloexec(err) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  kj::AutoCloseFd errRead(err[0]), errWrite(err[1]);

  SpawnSpec spec;
  spec.program = program;
  spec.args = {program};
  // No secret and nothing of pined's environment: a path to find tools, its folder as HOME.
  spec.env = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "LANG=C.UTF-8", "PINE_SOURCE=" + source};
  spec.stdinFd = programEnd.get();
  spec.stdoutFd = programEnd.get();
  spec.stderrFd = errWrite.get();
  spec.cwd = dir;
  spec.label = "source " + source;
  pid_t pid = spawnChild(spec);  // the owner's program, unconfined by design (seed layer 6)
  programEnd = nullptr;
  errWrite = nullptr;
  audit("process.start", {{"process", "source"}, {"process_pid", pid}, {"source", source}, {"program", program}});
  spdlog::info("source '{}': started its program {} (pid {})", source, program, pid);
  auto exit = sup.adoptSourceProgram(pid, source);
  auto in = io.lowLevelProvider->wrapInputFd(errRead.release(), kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP);
  auto log = logLines(kj::mv(in), source, "").eagerlyEvaluate([source](kj::Exception&& e) {
    spdlog::warn("source program '{}': its stderr: {}", source, e.getDescription().cStr());
  });
  return StartedProgram{pid, brokerEnd.release(), kj::mv(exit), kj::mv(log)};
}

}  // namespace pine
