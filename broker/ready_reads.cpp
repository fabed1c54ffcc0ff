#include "broker/ready_reads.h"

#include <errno.h>
#include <kj/debug.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/ioctl.h>

namespace pine {

namespace {

int socketOf(const kj::AsyncIoStream& s) {
  KJ_IF_MAYBE(fd, s.getFd()) { return *fd; }
  KJ_FAIL_REQUIRE("ReadyReads needs a stream with a socket");
}

// Bytes the socket holds that no read has taken yet (0 when the question fails: then the wait
// decides, as before).
int bytesLeft(int fd) {
  int n = 0;
  if (ioctl(fd, FIONREAD, &n) != 0) return 0;
  return n;
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
  // Not when bytes are left all the same: a read that empties a full receive window reopens it,
  // and on loopback the sender's next bytes arrive before the read returns; the wait for them was
  // seen never to end (a client pipelining megabytes, after short reads of 878 bytes and of 48 KB).
  // Asked only where a window can have been full: after a read of a kilobyte or more, or one that
  // follows a read that filled its buffer. A single request is smaller and follows a short read,
  // so single events cost no more.
  bool ended = false;
  KJ_IF_MAYBE(e, observer_.atEndHint()) { ended = *e; }
  bool filled = lastFilled_;
  lastFilled_ = got >= maxBytes;
  if (got < maxBytes && !ended && !((n >= kCheckAfter || filled) && bytesLeft(fd_) > 0))
    ready_ = observer_.whenBecomesReadable();
  if (got >= minBytes) return got;
  return readSome(buffer, minBytes, maxBytes, got);
}

}  // namespace pine
