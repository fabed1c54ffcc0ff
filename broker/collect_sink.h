// A ByteSink that keeps what pined relays whole, up to a cap (a write past it fails the call):
// the Bot API's answers and files, an http source's page.
#pragma once
#include <kj/debug.h>

#include <memory>
#include <string>

#include "proto/supervisor.capnp.h"

namespace pine {

class CollectSink final : public proto::ByteSink::Server {
 public:
  CollectSink(std::shared_ptr<std::string> out, size_t cap, const char* what) : out_(kj::mv(out)), cap_(cap), what_(what) {}

 protected:
  kj::Promise<void> write(WriteContext context) override {
    auto chunk = context.getParams().getChunk();
    KJ_REQUIRE(out_->size() + chunk.size() <= cap_, what_);
    out_->append(reinterpret_cast<const char*>(chunk.begin()), chunk.size());
    return kj::READY_NOW;
  }

 private:
  std::shared_ptr<std::string> out_;
  size_t cap_;
  const char* what_;
};

}  // namespace pine
