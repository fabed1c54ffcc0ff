// `pinectl stop`: asks pined over its own socket to stop as SIGTERM would (the owner may not be
// allowed to signal pine's uid), then waits until it no longer answers.
#include <kj/async-io.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "common/rpc_link.h"
#include "pinectl/commands.h"
#include "pinectl/owner_socket.h"
#include "proto/owner.capnp.h"

namespace pine {

int cmdStop(const std::string& home, std::ostream& out, std::ostream& err) {
  {
    auto io = kj::setupAsyncIo();
    RpcLink link(wrapSocket(*io.lowLevelProvider, connectOwnerSocket(home)), capnp::rpc::twoparty::Side::CLIENT,
                 nullptr, LinkLimits{0, 1 << 16});
    link.peer().castAs<proto::Owner>().stopRequest().send().wait(io.waitScope);
  }
  // pined stops its workers, connectors and the broker first (at most about 10 s), then exits.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = -1;
    try {
      fd = connectOwnerSocket(home);
    } catch (std::exception&) {
      out << "pined stopped\n";
      return 0;
    }
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  err << "pinectl: pined was asked to stop and still answers after 30 s; see " << home << "/data/logs/pined.log\n";
  return 1;
}

}  // namespace pine
