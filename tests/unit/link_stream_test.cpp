// LinkStream: the worker link's byte stream. Everything written arrives, in order, however the
// socket fills; small writes wait for the loop to be idle and leave together; a peer passing
// fds or hanging up cannot stall or kill us.
#include "common/link_stream.h"
#include "common/cloexec.h"

#include <capnp/serialize.h>

#include <dirent.h>
#include <fcntl.h>
#include <doctest/doctest.h>
#include <kj/async-io.h>
#include <kj/debug.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

using namespace pine;

namespace {

struct Pair {
  int fd[2];
  Pair() { REQUIRE(pine::socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, fd) == 0); }
};

std::string pattern(size_t size, unsigned seed) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = char((i * 131 + seed) >> 3);
  return s;
}

size_t openFds() {
  size_t n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

kj::Promise<std::string> readExactly(kj::AsyncIoStream& s, size_t size) {
  auto buffer = kj::heapArray<char>(size);
  auto p = s.read(buffer.begin(), size);
  return p.then([b = kj::mv(buffer)]() { return std::string(b.begin(), b.size()); });
}

// Reads `total` bytes with tryRead() calls of at most `step` bytes each.
kj::Promise<std::string> readInPieces(kj::AsyncIoStream& s, size_t total, size_t step, std::string sofar = "") {
  if (sofar.size() == total) return sofar;
  auto buffer = kj::heapArray<char>(std::min(step, total - sofar.size()));
  auto p = s.tryRead(buffer.begin(), 1, buffer.size());
  return p.then([&s, total, step, sofar = kj::mv(sofar), b = kj::mv(buffer)](size_t n) mutable {
    KJ_REQUIRE(n > 0, "the stream ended early");
    sofar.append(b.begin(), n);
    return readInPieces(s, total, step, kj::mv(sofar));
  });
}

}  // namespace

TEST_CASE("everything written arrives whole and in order, also past a full socket") {
  auto io = kj::setupAsyncIo();
  for (size_t readSize : {size_t(1) << 30, size_t(1000)}) {  // large reads, and small ones from the buffer
    Pair p;
    LinkStream a(io.unixEventPort, p.fd[0]), b(io.unixEventPort, p.fd[1]);
    // Small pieces, one far larger than the socket's buffer and the gather limit, small again.
    std::string small1 = pattern(100, 1), big = pattern(6 << 20, 2), small2 = pattern(3000, 3);
    kj::ArrayPtr<const kj::byte> pieces[] = {
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(small1.data()), small1.size()),
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(big.data()), big.size())};
    auto w1 = a.write(kj::arrayPtr(pieces, 2));  // waits until the socket took it all (back-pressure)
    size_t total = small1.size() + big.size() + small2.size();
    auto got = readInPieces(b, total, readSize);
    w1.wait(io.waitScope);
    a.write(small2.data(), small2.size()).wait(io.waitScope);
    CHECK(got.wait(io.waitScope) == small1 + big + small2);
  }
}

TEST_CASE("small writes wait for the loop to go idle, then leave together") {
  auto io = kj::setupAsyncIo();
  Pair p;
  LinkStream a(io.unixEventPort, p.fd[0]);
  char none;
  a.write("ab", 2).wait(io.waitScope);  // accepted at once
  a.write("cd", 2).wait(io.waitScope);
  a.write("ef", 2).wait(io.waitScope);
  CHECK(recv(p.fd[1], &none, 1, MSG_DONTWAIT) == -1);  // nothing sent yet: the loop was never idle
  io.waitScope.poll();
  char got[16] = {};
  CHECK(recv(p.fd[1], got, sizeof got, MSG_DONTWAIT) == 6);
  CHECK(std::string(got) == "abcdef");
}

TEST_CASE("a peer passing file descriptors gets them dropped and cannot stall the link") {
  auto io = kj::setupAsyncIo();
  Pair p;
  LinkStream b(io.unixEventPort, p.fd[1]);
  auto& timer = io.provider->getTimer();
  // A first message read through epoll, so that the stream knows the peer is still there and
  // treats a short read as an empty socket from then on.
  auto hi = readExactly(b, 2);
  io.waitScope.poll();
  REQUIRE(send(p.fd[0], "hi", 2, 0) == 2);
  CHECK(timer.timeoutAfter(10 * kj::SECONDS, kj::mv(hi)).wait(io.waitScope) == "hi");
  size_t before = openFds();
  // "hello" carries a pipe's fd; "world" follows at once, without one. A read stops at the
  // message with the fd: taking that short read for an empty socket would wait forever.
  int pipeFds[2];
  REQUIRE(pipe(pipeFds) == 0);
  char control[CMSG_SPACE(sizeof(int))] = {};
  struct iovec iov = {const_cast<char*>("hello"), 5};
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  auto* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cmsg), &pipeFds[0], sizeof(int));
  REQUIRE(sendmsg(p.fd[0], &msg, 0) == 5);
  REQUIRE(send(p.fd[0], "world", 5, 0) == 5);
  close(pipeFds[0]);
  close(pipeFds[1]);

  CHECK(timer.timeoutAfter(10 * kj::SECONDS, readExactly(b, 5)).wait(io.waitScope) == "hello");
  CHECK(timer.timeoutAfter(10 * kj::SECONDS, readExactly(b, 5)).wait(io.waitScope) == "world");
  CHECK(openFds() == before);  // the pipe's ends are closed here, and no fd came in
  // And a later message still wakes the reader.
  auto later = readExactly(b, 3);
  REQUIRE(send(p.fd[0], "end", 3, 0) == 3);
  CHECK(timer.timeoutAfter(10 * kj::SECONDS, kj::mv(later)).wait(io.waitScope) == "end");
}

TEST_CASE("a peer that hangs up ends reads and fails writes, without SIGPIPE") {
  auto io = kj::setupAsyncIo();
  auto previous = signal(SIGPIPE, SIG_DFL);  // an unguarded write to a closed socket would kill the test
  {
    Pair p;
    LinkStream a(io.unixEventPort, p.fd[0]);
    close(p.fd[1]);
    char buffer[8];
    CHECK(a.tryRead(buffer, 1, sizeof buffer).wait(io.waitScope) == 0);
    a.write("x", 1).wait(io.waitScope);  // gathered; sending happens when the loop is idle
    io.waitScope.poll();
    auto failure = [&](const void* data, size_t size) {
      try {
        a.write(data, size).wait(io.waitScope);
      } catch (kj::Exception& e) {
        return kj::str(e.getType(), " ", e.getDescription());
      }
      return kj::str("written");
    };
    auto first = failure("y", 1);
    INFO(std::string(first.cStr()));
    CHECK(std::string(first.cStr()).find("disconnected sendmsg") == 0);
    std::string big(1 << 20, 'z');  // one too large to gather fails as well
    CHECK(std::string(failure(big.data(), big.size()).cStr()).find("disconnected sendmsg") == 0);
  }
  signal(SIGPIPE, previous);
}

namespace {
// A message with `segments` segments of `words` words each, as bytes in the standard framing.
std::string framed(uint32_t segments, uint32_t words, char fill) {
  std::string table(((4 + 4 * segments + 7) / 8) * 8, '\0');
  auto put = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) table[at + i] = char(v >> (8 * i));
  };
  put(0, segments - 1);
  for (uint32_t i = 0; i < segments; ++i) put(4 + 4 * i, words);
  return table + std::string(size_t(segments) * words * 8, fill);
}

capnp::ReaderOptions limits(uint64_t words) {
  capnp::ReaderOptions o;
  o.traversalLimitInWords = words;
  return o;
}
}  // namespace

TEST_CASE("whole messages: buffered ones at once, split ones piece by piece, bad ones refused") {
  auto io = kj::setupAsyncIo();
  auto& timer = io.provider->getTimer();
  auto read = [&](LinkStream& s, uint64_t limit) {
    return timer.timeoutAfter(10 * kj::SECONDS, s.readMessage(limits(limit))).wait(io.waitScope);
  };
  auto firstWord = [](kj::Maybe<kj::Own<capnp::MessageReader>>& m, uint32_t segment) {
    auto& reader = *KJ_ASSERT_NONNULL(m);
    auto words = reader.getSegment(segment);
    return std::string(reinterpret_cast<const char*>(words.begin()), words.size() * 8);
  };

  SUBCASE("several messages in one send, then a clean end") {
    Pair p;
    LinkStream s(io.unixEventPort, p.fd[1]);
    std::string both = framed(1, 2, 'a') + framed(3, 1, 'b');
    REQUIRE(send(p.fd[0], both.data(), both.size(), 0) == ssize_t(both.size()));
    close(p.fd[0]);
    auto one = read(s, 1000);
    CHECK(firstWord(one, 0) == std::string(16, 'a'));
    auto two = read(s, 1000);
    CHECK(firstWord(two, 2) == std::string(8, 'b'));
    CHECK(read(s, 1000) == nullptr);
  }
  SUBCASE("a message that arrives a few bytes at a time, larger than the buffer") {
    Pair p;
    LinkStream s(io.unixEventPort, p.fd[1]);
    std::string big = framed(2, 5000, 'c');  // 80 KB
    auto message = s.readMessage(limits(1 << 20));
    size_t at = 0;
    for (size_t step : {3, 7, 100, 40000}) {  // the table itself arrives in pieces
      REQUIRE(send(p.fd[0], big.data() + at, step, 0) == ssize_t(step));
      at += step;
      io.waitScope.poll();
    }
    REQUIRE(send(p.fd[0], big.data() + at, big.size() - at, 0) == ssize_t(big.size() - at));
    auto got = timer.timeoutAfter(10 * kj::SECONDS, kj::mv(message)).wait(io.waitScope);
    CHECK(firstWord(got, 1) == std::string(40000, 'c'));
  }
  SUBCASE("refused: too many segments, beyond the traversal limit, cut off in the middle") {
    std::pair<std::string, const char*> cases[] = {{framed(512, 0, 'x'), "too many segments"},
                                                   {framed(2, 600, 'x'), "too large"},
                                                   {framed(1, 4, 'x').substr(0, 20), "in the middle of a message"}};
    for (auto& [bad, why] : cases) {
      Pair p;
      LinkStream s(io.unixEventPort, p.fd[1]);
      REQUIRE(send(p.fd[0], bad.data(), bad.size(), 0) == ssize_t(bad.size()));
      close(p.fd[0]);
      std::string error = "none";
      try {
        read(s, 1000);
      } catch (kj::Exception& e) {
        error = e.getDescription().cStr();
      }
      CHECK_MESSAGE(error.find(why) != std::string::npos, error);
    }
  }
}

TEST_CASE("whole messages written are framed as Cap'n Proto frames them") {
  auto io = kj::setupAsyncIo();
  Pair p;
  LinkMessageStream out(kj::heap<LinkStream>(io.unixEventPort, p.fd[0]));
  capnp::word a[2], b[1];
  memset(static_cast<void*>(a), 'a', sizeof a);
  memset(static_cast<void*>(b), 'b', sizeof b);
  kj::ArrayPtr<const capnp::word> segments[] = {kj::arrayPtr(a, 2), kj::arrayPtr(b, 1)};
  out.writeMessage(nullptr, kj::arrayPtr(segments, 2)).wait(io.waitScope);
  io.waitScope.poll();
  char got[64] = {};
  ssize_t n = recv(p.fd[1], got, sizeof got, MSG_DONTWAIT);
  std::string expected = std::string("\1\0\0\0\2\0\0\0\1\0\0\0\0\0\0\0", 16) + std::string(16, 'a') + std::string(8, 'b');
  CHECK(std::string(got, size_t(std::max<ssize_t>(n, 0))) == expected);
  int fd = 0;
  CHECK_THROWS_AS(out.writeMessage(kj::arrayPtr(&fd, 1), kj::arrayPtr(segments, 2)).wait(io.waitScope), kj::Exception);
}
