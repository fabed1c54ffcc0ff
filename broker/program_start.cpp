#include "broker/program_start.h"

#include <fcntl.h>
#include <kj/debug.h>

#include <memory>

namespace pine {
namespace {

// pined's answer (a process handle and the socket of the program's stdin and stdout) as a link.
template <typename Results>
kj::Promise<sources::ProgramLink> linkOf(kj::LowLevelAsyncIoProvider& io, Results&& r, const char* what) {
  auto process = r.getProcess();
  auto socket = r.getSocket();
  // `socket` owns the fd until we have our own copy: keep it alive until then.
  return socket.getFd().then([&io, process, socket, what](kj::Maybe<int> fd) mutable {
    int mine = -1;
    KJ_IF_MAYBE (f, fd) { mine = fcntl(*f, F_DUPFD_CLOEXEC, 3); }
    if (mine < 0) {
      process.killRequest().send().detach([](kj::Exception&&) {});
      KJ_FAIL_REQUIRE("pined handed over no socket", what);
    }
    sources::ProgramLink link;
    link.stream = io.wrapSocketFd(mine, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP);
    // std::function needs a copyable target; a capability's client copies only from a mutable one.
    auto handle = std::make_shared<proto::WorkerProcess::Client>(kj::mv(process));
    link.exited = [handle]() {
      return handle->waitRequest().send().then([](auto&& w) {
        auto exit = w.getExit();
        if (exit.isSignal()) return "was killed by signal " + std::to_string(exit.getSignal());
        return "exited with " + std::to_string(exit.getCode());
      });
    };
    return link;
  });
}

}  // namespace

kj::Promise<sources::ProgramLink> startSourceProgram(kj::LowLevelAsyncIoProvider& io, proto::Supervisor::Client supervisor,
                                                     const std::string& source) {
  auto req = supervisor.startSourceProgramRequest();
  req.setSource(source);
  return req.send().then([&io](auto&& r) { return linkOf(io, r, "for the source program"); });
}

kj::Promise<sources::ProgramLink> startMcpServer(kj::LowLevelAsyncIoProvider& io, proto::Supervisor::Client supervisor,
                                                 const std::string& agent, const std::string& server) {
  auto req = supervisor.startMcpServerRequest();
  req.setAgent(agent);
  req.setServer(server);
  return req.send().then([&io](auto&& r) { return linkOf(io, r, "for the MCP server"); });
}

}  // namespace pine
