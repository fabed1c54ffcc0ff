// TurnWrites over a real socket pair on KJ's event loop: the writes of one turn are one write
// of the socket (counted by a pass-through below it), the reader gets every byte in order, what
// was taken is written even when the wrapper is dropped at once, a writer past the bound waits
// for a slow reader, and a failed write is reported to the next writer.
#include <doctest/doctest.h>
#include <kj/async-io.h>

#include <string>

#include "broker/turn_writes.h"

namespace {

// The socket, counting the writes that reach it.
class Counting final : public kj::AsyncIoStream {
 public:
  Counting(kj::Own<kj::AsyncIoStream> inner, int& writes) : inner_(kj::mv(inner)), writes_(writes) {}
  kj::Promise<size_t> tryRead(void* b, size_t min, size_t max) override { return inner_->tryRead(b, min, max); }
  kj::Promise<void> write(const void* b, size_t n) override {
    ++writes_;
    return inner_->write(b, n);
  }
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override {
    ++writes_;
    return inner_->write(pieces);
  }
  kj::Promise<void> whenWriteDisconnected() override { return inner_->whenWriteDisconnected(); }
  void shutdownWrite() override { inner_->shutdownWrite(); }

 private:
  kj::Own<kj::AsyncIoStream> inner_;
  int& writes_;
};

struct Pair {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  int writes = 0;
  kj::Own<pine::TurnWrites> ours;
  kj::Own<kj::AsyncIoStream> peer;
  Pair() {
    auto pipe = io.provider->newTwoWayPipe();
    ours = kj::heap<pine::TurnWrites>(kj::heap<Counting>(kj::mv(pipe.ends[0]), writes), io.provider->getTimer());
    peer = kj::mv(pipe.ends[1]);
  }
  // Everything the peer reads until the other end shuts down (or `want` bytes).
  std::string readAll(size_t want = SIZE_MAX) {
    std::string got;
    char buf[65536];
    while (got.size() < want) {
      size_t n = peer->tryRead(buf, 1, sizeof buf).wait(io.waitScope);
      if (n == 0) break;
      got.append(buf, n);
    }
    return got;
  }
};

}  // namespace

TEST_CASE("turn writes: an answer's head and body written in one turn reach the socket as one write") {
  Pair p;
  auto head = p.ours->write("HTTP/1.1 200 OK\r\n\r\n", 19);
  auto body = p.ours->write("{\"ok\":true}", 11);
  CHECK(p.writes == 0);  // taken, not yet written: the turn is not over
  head.wait(p.io.waitScope);
  body.wait(p.io.waitScope);
  CHECK(p.readAll(30) == "HTTP/1.1 200 OK\r\n\r\n{\"ok\":true}");
  CHECK(p.writes == 1);
  // The next turn's writes are a write of their own, after the first.
  p.ours->write("next", 4).wait(p.io.waitScope);
  CHECK(p.readAll(4) == "next");
  CHECK(p.writes == 2);
}

TEST_CASE("turn writes: what was taken is written when the connection is dropped right after, then it closes") {
  Pair p;
  p.ours->write("last answer", 11).wait(p.io.waitScope);
  p.ours->shutdownWrite();
  p.ours = nullptr;  // as kj-http drops a connection it closes after its answer
  CHECK(p.readAll() == "last answer");  // and then the end of the stream: the socket was closed
  CHECK(p.writes == 1);
}

TEST_CASE("turn writes: past the bound a writer waits until a slow reader has taken it") {
  Pair p;
  std::string big(4 << 20, 'x');  // more than the socket pair's buffers hold
  auto written = p.ours->write(big.data(), big.size());
  CHECK_FALSE(written.poll(p.io.waitScope));  // the reader has not read: the writer waits
  auto got = p.readAll(big.size());
  CHECK(got.size() == big.size());
  CHECK(got == big);
  written.wait(p.io.waitScope);
  // The legitimate twin: a small write is taken at once.
  auto small = p.ours->write("y", 1);
  CHECK(small.poll(p.io.waitScope));
  small.wait(p.io.waitScope);
}

TEST_CASE("turn writes: a write that failed is reported to every later writer") {
  Pair p;
  p.peer = nullptr;  // the client went away
  // Writes are taken before anyone knows; once one reached the closed socket and failed, each
  // later write fails at once.
  int firstFailure = -1;
  for (int i = 0; i < 50 && firstFailure < 0; ++i) {
    auto w = p.ours->write("lost", 4);
    try {
      w.wait(p.io.waitScope);
    } catch (kj::Exception&) {
      firstFailure = i;
    }
    p.io.provider->getTimer().afterDelay(0 * kj::NANOSECONDS).wait(p.io.waitScope);
  }
  REQUIRE(firstFailure >= 0);
  CHECK_THROWS(p.ours->write("more", 4).wait(p.io.waitScope));
  CHECK_THROWS(p.ours->write("and more", 8).wait(p.io.waitScope));
}
