// ReadyReads (broker/ready_reads.h) over a real socket pair and KJ's event loop: bytes that
// arrive after a read found the socket empty are read, however they are cut, and nothing is lost
// or waited for when the socket still holds bytes.
#include <doctest/doctest.h>
#include <kj/async-io.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "broker/ready_reads.h"

namespace {

struct SocketPair {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  int peer = -1;
  kj::Own<pine::ReadyReads> stream;
  SocketPair() {
    int fds[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);  // portable: flags set below, as on macOS
    for (int fd : fds) {
      REQUIRE(fcntl(fd, F_SETFD, FD_CLOEXEC) == 0);
      REQUIRE(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
    }
    peer = fds[1];
    auto inner = io.lowLevelProvider->wrapSocketFd(fds[0], kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP |
                                                               kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC |
                                                               kj::LowLevelAsyncIoProvider::ALREADY_NONBLOCK);
    stream = kj::heap<pine::ReadyReads>(kj::mv(inner), io.unixEventPort);
  }
  ~SocketPair() {
    stream = nullptr;
    if (peer >= 0) close(peer);
  }
  void send(const std::string& s) { REQUIRE(::write(peer, s.data(), s.size()) == (ssize_t)s.size()); }
  std::string read(size_t min, size_t max) {
    std::string buf(max, '\0');
    size_t n = stream->tryRead(buf.data(), min, max).wait(io.waitScope);
    buf.resize(n);
    return buf;
  }
  // Sends `s` after a few polls of the loop, while a read is already waiting.
  kj::Promise<void> sendLater(std::string s) {
    return io.provider->getTimer().afterDelay(0 * kj::NANOSECONDS).then([this, s]() {
      return io.provider->getTimer().afterDelay(0 * kj::NANOSECONDS).then([this, s]() { send(s); });
    }).eagerlyEvaluate(nullptr);  // runs while the read waits, not only when awaited
  }
};

}  // namespace

TEST_CASE("ready reads: after a short read, bytes sent before or after the next read are read") {
  SocketPair p;
  p.send("GET / HTTP/1.1\r\n\r\n");
  CHECK(p.read(1, 4096) == "GET / HTTP/1.1\r\n\r\n");  // short: the socket was emptied
  // Sent before the next read is asked for (a pipelined request, or the body's second piece).
  p.send("second");
  CHECK(p.read(1, 4096) == "second");
  // Sent while the read waits.
  auto later = p.sendLater("third");
  CHECK(p.read(1, 4096) == "third");
  later.wait(p.io.waitScope);
}

TEST_CASE("ready reads: a read that fills its buffer leaves the rest to be read at once; minBytes is waited for") {
  SocketPair p;
  p.send("0123456789");
  CHECK(p.read(1, 4) == "0123");  // full: the socket may hold more
  CHECK(p.read(1, 100) == "456789");
  // Two pieces for one read of at least 5 bytes.
  p.send("ab");
  auto later = p.sendLater("cde");
  CHECK(p.read(5, 100) == "abcde");
  later.wait(p.io.waitScope);
}

TEST_CASE("ready reads: the peer's close ends a waiting read with what it has") {
  SocketPair p;
  p.send("last");
  CHECK(p.read(1, 100) == "last");
  close(p.peer);
  p.peer = -1;
  CHECK(p.read(1, 100) == "");
}

TEST_CASE("ready reads: bytes and the peer's end that the loop saw together: the next read ends at once") {
  SocketPair p;
  const std::string head = "POST /v1/events HTTP/1.1\r\nContent-Length: 40\r\n\r\n{\"topic\"";
  p.send(head);
  REQUIRE(shutdown(p.peer, SHUT_WR) == 0);
  // The loop sees bytes and end in one event while no read waits (edge-triggered: there is no second).
  p.io.waitScope.poll();
  CHECK(p.read(1, 4096) == head);  // short: the socket is empty, and at its end
  std::string buf(100, '\0');
  auto rest = p.stream->tryRead(buf.data(), 1, buf.size());
  auto timedOut = p.io.provider->getTimer().afterDelay(2 * kj::SECONDS).then([]() -> size_t { return 999; });
  CHECK(rest.exclusiveJoin(kj::mv(timedOut)).wait(p.io.waitScope) == 0);  // ended, not waited out
}
