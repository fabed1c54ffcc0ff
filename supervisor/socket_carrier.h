// One file descriptor carried across an RPC link by fd passing (proto Socket):
// the receiver takes it with getFd(). Owns the descriptor until the message is gone.
#pragma once
#include <kj/io.h>

#include "proto/supervisor.capnp.h"

namespace pine {

class SocketCarrier final : public proto::Socket::Server {
 public:
  explicit SocketCarrier(int fd) : fd_(fd) {}
  kj::Maybe<int> getFd() override { return fd_.get(); }

 private:
  kj::AutoCloseFd fd_;
};

}  // namespace pine
