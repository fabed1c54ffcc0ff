// fd passing through the Supervisor capability: the path a worker's socket takes to the broker.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <kj/async-io.h>
#include <kj/debug.h>
#include <kj/io.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/rpc_link.h"
#include "proto/supervisor.capnp.h"
#include "common/cloexec.h"

using namespace pine;

namespace {
class Carrier final : public proto::Socket::Server {
 public:
  explicit Carrier(int fd) : fd_(fd) {}
  kj::Maybe<int> getFd() override { return fd_.get(); }

 private:
  kj::AutoCloseFd fd_;
};

class FakeSupervisor final : public proto::Supervisor::Server {
 public:
  int sentWriteEnd = -1;

 protected:
  kj::Promise<void> spawnWorker(SpawnWorkerContext ctx) override {
    int p[2];
    KJ_SYSCALL(pine::pipeCloexec(p));
    sentWriteEnd = p[1];
    ctx.getResults().setSocket(kj::heap<Carrier>(p[0]));
    ctx.getResults().setPid(7);
    return kj::READY_NOW;
  }
};
}  // namespace

TEST_CASE("a capability carries a file descriptor from pined to the broker") {
  auto io = kj::setupAsyncIo();
  int sv[2];
  REQUIRE(pine::socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  auto fake = kj::heap<FakeSupervisor>();
  auto& sup = *fake;
  RpcLink pined(wrapSocket(*io.lowLevelProvider, sv[0]), capnp::rpc::twoparty::Side::SERVER, kj::mv(fake),
                LinkLimits{1, 1 << 20});
  RpcLink broker(wrapSocket(*io.lowLevelProvider, sv[1]), capnp::rpc::twoparty::Side::CLIENT, nullptr,
                 LinkLimits{4, 1 << 20});
  auto client = broker.peer().castAs<proto::Supervisor>();
  auto resp = client.spawnWorkerRequest().send().wait(io.waitScope);
  auto socket = resp.getSocket();
  auto fd = socket.getFd().wait(io.waitScope);
  int received = -1;
  KJ_IF_MAYBE(f, fd) { received = fcntl(*f, F_DUPFD_CLOEXEC, 3); }
  REQUIRE(received >= 0);
  // Prove it is the same pipe: write on pined's end, read on the received copy.
  REQUIRE(write(sup.sentWriteEnd, "x", 1) == 1);
  char c = 0;
  CHECK(read(received, &c, 1) == 1);
  CHECK(c == 'x');
  close(received);
  close(sup.sentWriteEnd);
}
