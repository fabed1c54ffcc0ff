// The owner's own line to pined (proto/owner.capnp) on <home>/pined.sock:
// secret values travel pinectl -> pined only, never through the broker.
#pragma once
#include <kj/async-io.h>

#include <string>

#include "proto/owner.capnp.h"

namespace pine {

class Supervisor;

class OwnerListener final : private kj::TaskSet::ErrorHandler {
 public:
  OwnerListener(kj::AsyncIoContext& io, Supervisor& sup);
  // Binds `path` (mode 600, replacing a stale socket) and serves each connection
  // from our own uid; others are dropped and logged.
  void listen(const std::string& path);

 private:
  kj::Promise<void> acceptLoop();
  void taskFailed(kj::Exception&& e) override;
  kj::AsyncIoContext& io_;
  Supervisor& sup_;
  kj::Own<kj::ConnectionReceiver> receiver_;
  kj::TaskSet tasks_;
};

}  // namespace pine
