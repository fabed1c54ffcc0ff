// A connection of the control API whose writes of one turn of the event loop go out as one
// write of the socket. kj-http 0.9 writes an answer's head and its body separately, and each
// write wakes the client (twice the wake-ups per request: on a VM the largest cost of a small
// request). A write is taken at once (copied) while at most kMaxWaiting bytes wait; past that it
// resolves once they are written, so a slow reader still holds the writer back. What was taken
// is written even when this wrapper is gone (kj-http drops a connection right after the answer
// it closes with), for at most kDrainTime, then the socket is closed. A failed write is
// reported to every later one.
#pragma once
#include <kj/async-io.h>
#include <kj/timer.h>

#include <cstddef>

namespace pine {

class TurnWrites final : public kj::AsyncIoStream {
 public:
  static constexpr size_t kMaxWaiting = 64 * 1024;
  static constexpr kj::Duration kDrainTime = 10 * kj::SECONDS;

  TurnWrites(kj::Own<kj::AsyncIoStream> inner, kj::Timer& timer);
  ~TurnWrites();

  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override;
  kj::Maybe<uint64_t> tryGetLength() override;
  kj::Promise<void> write(const void* buffer, size_t size) override;
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override;
  kj::Promise<void> whenWriteDisconnected() override;
  void shutdownWrite() override;
  kj::Maybe<int> getFd() const override;

  struct State;  // shared with the write in flight, which may outlive the wrapper

 private:
  kj::Own<State> state_;
};

}  // namespace pine
