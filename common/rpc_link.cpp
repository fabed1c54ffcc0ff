#include "common/rpc_link.h"

#include <capnp/message.h>

namespace pine {

static capnp::ReaderOptions readerOptions(uint64_t traversalLimitWords) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = traversalLimitWords;
  options.nestingLimit = 32;
  return options;
}

RpcLink::RpcLink(kj::Own<kj::AsyncCapabilityStream> stream, capnp::rpc::twoparty::Side side,
                 capnp::Capability::Client bootstrap, LinkLimits limits)
    : stream_(kj::mv(stream)),
      network_(*stream_, limits.maxFdsPerMessage, side, readerOptions(limits.traversalLimitWords)),
      rpc_(capnp::makeRpcServer(network_, kj::mv(bootstrap))) {}

RpcLink::RpcLink(kj::Own<capnp::MessageStream> messages, capnp::rpc::twoparty::Side side,
                 capnp::Capability::Client bootstrap, uint64_t traversalLimitWords)
    : messages_(kj::mv(messages)),
      network_(*messages_, side, readerOptions(traversalLimitWords)),
      rpc_(capnp::makeRpcServer(network_, kj::mv(bootstrap))) {}

capnp::Capability::Client RpcLink::peer() {
  capnp::word scratch[4];
  memset(scratch, 0, sizeof scratch);
  capnp::MallocMessageBuilder message(scratch);
  auto vatId = message.getRoot<capnp::rpc::twoparty::VatId>();
  vatId.setSide(network_.getSide() == capnp::rpc::twoparty::Side::CLIENT ? capnp::rpc::twoparty::Side::SERVER
                                                                        : capnp::rpc::twoparty::Side::CLIENT);
  return rpc_.bootstrap(vatId);
}

kj::Own<kj::AsyncCapabilityStream> wrapSocket(kj::LowLevelAsyncIoProvider& lowLevel, int fd) {
  return lowLevel.wrapUnixSocketFd(fd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP);
}

std::string describeRemote(const kj::Exception& e) {
  std::string d = e.getDescription().cStr();
  const std::string remote = "remote exception: ";
  return d.rfind(remote, 0) == 0 ? d.substr(remote.size()) : d;
}

}  // namespace pine
