#include "broker/command_start.h"

#include <fcntl.h>
#include <kj/io.h>
#include <unistd.h>

#include <memory>

namespace pine {
namespace {

class ProcessHandle final : public sources::CommandHandle {
 public:
  explicit ProcessHandle(proto::WorkerProcess::Client process) : process_(kj::mv(process)) {}
  kj::Promise<sources::CommandExit> wait() override {
    return process_.waitRequest().send().then([](capnp::Response<proto::WorkerProcess::WaitResults>&& r) {
      auto exit = r.getExit();
      if (exit.isSignal()) return sources::CommandExit{true, exit.getSignal()};
      return sources::CommandExit{false, exit.getCode()};
    });
  }
  void kill() override { process_.killRequest().send().detach([](kj::Exception&&) {}); }

 private:
  proto::WorkerProcess::Client process_;  // dropped: pined kills the command
};

// Our own copy of a descriptor that came with the answer (the capability owns its copy).
kj::Promise<int> takeFd(proto::Socket::Client socket) {
  return socket.getFd().then([socket](kj::Maybe<int> fd) mutable {
    int mine = -1;
    KJ_IF_MAYBE(f, fd) { mine = fcntl(*f, F_DUPFD_CLOEXEC, 3); }
    KJ_REQUIRE(mine >= 0, "pined handed over no pipe for the command's output");
    return mine;
  });
}

// The started command from pined's answer: its pipes' read ends wrapped for this loop.
template <class Response>
kj::Promise<sources::StartedCommand> takeStarted(kj::AsyncIoContext& io, Response&& r) {
  auto process = r.getProcess();
  std::string sandbox = r.getSandbox();
  auto err = r.getStderr();
  return takeFd(r.getStdout()).then([&io, process, sandbox, err](int outFd) mutable {
    kj::AutoCloseFd out(outFd);
    return takeFd(err).then([&io, process, sandbox, out = kj::mv(out)](int errFd) mutable {
      sources::StartedCommand c;
      c.out = io.lowLevelProvider->wrapInputFd(out.release(), kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP |
                                                                  kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC);
      c.err = io.lowLevelProvider->wrapInputFd(errFd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP |
                                                          kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC);
      c.process = kj::heap<ProcessHandle>(kj::mv(process));
      c.sandbox = sandbox;
      return c;
    });
  });
}

}  // namespace

sources::CommandStarter commandStarter(kj::AsyncIoContext& io, proto::Supervisor::Client supervisor) {
  // std::function copies what it holds; a capnp client copies only from a non-const one.
  auto shared = std::make_shared<proto::Supervisor::Client>(kj::mv(supervisor));
  return [&io, shared](const std::string& source) -> kj::Promise<sources::StartedCommand> {
    auto req = shared->runSourceCommandRequest();
    req.setSource(source);
    return req.send().then([&io](auto&& r) { return takeStarted(io, kj::mv(r)); });
  };
}

AgentCommandStarter agentCommandStarter(kj::AsyncIoContext& io, proto::Supervisor::Client supervisor) {
  auto shared = std::make_shared<proto::Supervisor::Client>(kj::mv(supervisor));
  return [&io, shared](const std::string& agent, const std::string& server, const std::string& command,
                       const std::string& args) -> kj::Promise<sources::StartedCommand> {
    auto req = shared->runAgentCommandRequest();
    req.setAgent(agent);
    req.setServer(server);
    req.setCommand(command);
    req.setArgs(args);
    return req.send().then([&io](auto&& r) { return takeStarted(io, kj::mv(r)); });
  };
}

}  // namespace pine
