#include "broker/ready_reads.h"

#include <errno.h>
#include <kj/debug.h>
#include <unistd.h>

#include <fcntl.h>

namespace pine {

namespace {

int socketOf(const kj::AsyncIoStream& s) {
  KJ_IF_MAYBE(fd, s.getFd()) { return *fd; }
  KJ_FAIL_REQUIRE("ReadyReads needs a stream with a socket");
}

int dupOf(int fd) {
  int copy;
  KJ_SYSCALL(copy = fcntl(fd, F_DUPFD_CLOEXEC, 0));
  return copy;
}

}  // namespace

ReadyReads::ReadyReads(kj::Own<kj::AsyncIoStream> inner, kj::UnixEventPort& port)
    : ForwardingStream(kj::mv(inner)),
      fd_(socketOf(*inner_)),
      watched_(dupOf(fd_)),
      observer_(port, watched_.get(), kj::UnixEventPort::FdObserver::OBSERVE_READ) {}

kj::Promise<size_t> ReadyReads::tryRead(void* buffer, size_t minBytes, size_t maxBytes) {
  return readSome(static_cast<kj::byte*>(buffer), minBytes, maxBytes, 0);
}

kj::Promise<size_t> ReadyReads::readSome(kj::byte* buffer, size_t minBytes, size_t maxBytes, size_t got) {
  KJ_IF_MAYBE(r, ready_) {
    // The socket was empty when last read: wait for bytes instead of a read that fails.
    auto waiting = kj::mv(*r);
    ready_ = nullptr;
    return waiting.then([this, buffer, minBytes, maxBytes, got]() { return readSome(buffer, minBytes, maxBytes, got); });
  }
  ssize_t n;
  do {
    n = ::read(fd_, buffer + got, maxBytes - got);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK) KJ_FAIL_SYSCALL("read", errno);
    ready_ = observer_.whenBecomesReadable();  // empty now: the next bytes make it readable
    return readSome(buffer, minBytes, maxBytes, got);
  }
  if (n == 0) return got;  // the peer closed
  got += (size_t)n;
  // Fewer bytes than asked for: the socket is empty, unless its end came with them (the loop has
  // seen it: atEndHint), and the next read says 0 at once; an edge-triggered wait would never end.
  // Else start the wait now, before the loop next looks for events, so that no arrival is missed.
  bool ended = false;
  KJ_IF_MAYBE(e, observer_.atEndHint()) { ended = *e; }
  if (got < maxBytes && !ended) ready_ = observer_.whenBecomesReadable();
  if (got >= minBytes) return got;
  return readSome(buffer, minBytes, maxBytes, got);
}

}  // namespace pine
