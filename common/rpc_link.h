// One Cap'n Proto connection over an inherited or passed unix socket: the single
// transport between pine's processes. Each side may serve a bootstrap capability
// and reach the other's with peer().
#pragma once
#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>

#include <string>

namespace pine {

struct LinkLimits {
  unsigned maxFdsPerMessage = 0;         // fds accepted from the peer in one message
  uint64_t traversalLimitWords = 8 << 20;  // largest message accepted, in 8-byte words
};

class RpcLink {
 public:
  // `side` is SERVER for the more privileged end (pined towards the broker, the broker towards a worker).
  RpcLink(kj::Own<kj::AsyncCapabilityStream> stream, capnp::rpc::twoparty::Side side,
          capnp::Capability::Client bootstrap, LinkLimits limits);
  // A link that carries no file descriptors (the worker's; see link_stream.h).
  RpcLink(kj::Own<capnp::MessageStream> messages, capnp::rpc::twoparty::Side side, capnp::Capability::Client bootstrap,
          uint64_t traversalLimitWords);
  KJ_DISALLOW_COPY(RpcLink);

  // The capability the other side serves as its bootstrap.
  capnp::Capability::Client peer();
  kj::Promise<void> onDisconnect() { return network_.onDisconnect(); }

 private:
  kj::Own<kj::AsyncCapabilityStream> stream_;  // one of these two
  kj::Own<capnp::MessageStream> messages_;
  capnp::TwoPartyVatNetwork network_;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc_;
};

// Wrap an fd this process owns (closed with the stream) as a capability-capable unix stream.
kj::Own<kj::AsyncCapabilityStream> wrapSocket(kj::LowLevelAsyncIoProvider& lowLevel, int fd);

// An exception's description without the "remote exception: " Cap'n Proto puts in front of a
// peer's error: what the owner reads should be the peer's own words.
std::string describeRemote(const kj::Exception& e);

}  // namespace pine
