// A stream that passes everything to the one it wraps: the base of the control API's connection
// wrappers (ready_reads.h, the head limits in control_api.cpp), which each change one thing and
// say only that.
#pragma once
#include <kj/async-io.h>

#include <algorithm>
#include <cstring>
#include <string>

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

// A connection some of whose bytes were read already (plain_events.cpp): they are read first.
class ReplayedStream final : public ForwardingStream {
 public:
  ReplayedStream(kj::Own<kj::AsyncIoStream> inner, std::string readAlready)
      : ForwardingStream(kj::mv(inner)), again_(std::move(readAlready)) {}
  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override {
    if (at_ == again_.size()) return inner_->tryRead(buffer, minBytes, maxBytes);
    size_t n = std::min(maxBytes, again_.size() - at_);
    memcpy(buffer, again_.data() + at_, n);
    at_ += n;
    if (at_ == again_.size()) std::string().swap(again_), at_ = 0;
    // What was read already may be less than minBytes: the rest comes from the connection.
    if (n >= minBytes) return n;
    return inner_->tryRead(static_cast<char*>(buffer) + n, minBytes - n, maxBytes - n).then([n](size_t more) {
      return n + more;
    });
  }

 private:
  std::string again_;
  size_t at_ = 0;
};

}  // namespace pine
