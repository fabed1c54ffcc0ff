// A stream that passes everything to the one it wraps: the base of the control API's connection
// wrappers (ready_reads.h, the head limits in control_api.cpp), which each change one thing and
// say only that.
#pragma once
#include <kj/async-io.h>

namespace pine {

class ForwardingStream : public kj::AsyncIoStream {
 public:
  explicit ForwardingStream(kj::Own<kj::AsyncIoStream> inner) : inner_(kj::mv(inner)) {}

  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override {
    return inner_->tryRead(buffer, minBytes, maxBytes);
  }
  // A connection's length is not known: kj-http must not take a short read for the end of a body.
  kj::Maybe<uint64_t> tryGetLength() override { return nullptr; }
  kj::Promise<void> write(const void* buffer, size_t size) override { return inner_->write(buffer, size); }
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override {
    return inner_->write(pieces);
  }
  kj::Promise<void> whenWriteDisconnected() override { return inner_->whenWriteDisconnected(); }
  void shutdownWrite() override { inner_->shutdownWrite(); }
  kj::Maybe<int> getFd() const override { return inner_->getFd(); }

 protected:
  kj::Own<kj::AsyncIoStream> inner_;
};

}  // namespace pine
