#include "common/link_stream.h"
#include "common/cloexec.h"
#include "common/send_no_signal.h"

#include <capnp/serialize.h>
#include <fcntl.h>
#include <kj/debug.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace pine {

namespace {
int prepare(int fd) {
  int flags;
  KJ_SYSCALL(flags = fcntl(fd, F_GETFL));
  if (!(flags & O_NONBLOCK)) {
    KJ_SYSCALL(fcntl(fd, F_SETFL, flags | O_NONBLOCK));
  }
  KJ_SYSCALL(fcntl(fd, F_SETFD, FD_CLOEXEC));
  return fd;
}

kj::Exception socketError(const char* call, int error) {
  auto type = error == EPIPE || error == ECONNRESET ? kj::Exception::Type::DISCONNECTED : kj::Exception::Type::FAILED;
  return kj::Exception(type, __FILE__, __LINE__, kj::str(call, ": ", strerror(error)));
}
}  // namespace

LinkStream::LinkStream(kj::UnixEventPort& port, int fd)
    : port_(port),
      fd_(prepare(fd)),
      readable_(port, fd, kj::UnixEventPort::FdObserver::OBSERVE_READ),
      buffer_(new kj::byte[kReadBuffer]),
      tasks_(*this) {}

LinkStream::~LinkStream() noexcept(false) {
  if (pending() > 0 && failed_ == nullptr) sendPending();  // best effort: a last message still goes out
  writable_ = nullptr;  // unregister before its descriptor closes
}

// ---- reading -------------------------------------------------------------------------------

size_t LinkStream::take(kj::byte* out, size_t max) {
  size_t n = std::min(max, end_ - start_);
  if (n > 0) memcpy(out, buffer_.get() + start_, n);
  start_ += n;
  return n;
}

kj::Promise<size_t> LinkStream::tryRead(void* buffer, size_t minBytes, size_t maxBytes) {
  return readMore(static_cast<kj::byte*>(buffer), minBytes, maxBytes, 0);
}

kj::Promise<size_t> LinkStream::readMore(kj::byte* out, size_t minBytes, size_t maxBytes, size_t got) {
  for (;;) {
    got += take(out + got, maxBytes - got);
    if (got >= minBytes || eof_) return got;
    // The buffer is empty and more is needed. Wait without a read first when the socket is
    // known to be empty; else read now, and wait only on EAGAIN (epoll is edge-triggered).
    kj::Maybe<kj::Promise<void>> wait;
    KJ_IF_MAYBE(primed, primed_) {
      wait = kj::mv(*primed);
      primed_ = nullptr;
    } else {
      size_t want = maxBytes - got;
      bool direct = want >= kReadBuffer;  // a large read skips the copy
      ssize_t n = direct ? receive(out + got, want) : receive(buffer_.get(), kReadBuffer);
      if (n > 0) {
        if (direct) {
          got += size_t(n);
        } else {
          start_ = 0;
          end_ = size_t(n);
        }
        continue;
      }
      if (n == 0) {
        eof_ = true;
        continue;
      }
      int error = errno;
      if (error == EINTR) continue;
      if (error != EAGAIN && error != EWOULDBLOCK) KJ_FAIL_SYSCALL("recvmsg", error);
      wait = readable_.whenBecomesReadable();
    }
    return KJ_ASSERT_NONNULL(wait).then(
        [this, out, minBytes, maxBytes, got]() { return readMore(out, minBytes, maxBytes, got); });
  }
}

// recvmsg() rather than read() so that we learn whether it stopped early at a message carrying
// file descriptors (the kernel drops them: this link takes none). A read that returns less
// than asked without stopping there has emptied the socket, and we arm the wait for the next
// edge at once; that is sound only while epoll has told us that the peer had not hung up
// (else a close seen earlier would never fire again), so otherwise we read on.
ssize_t LinkStream::receive(void* into, size_t size) {
  struct iovec iov = {into, size};
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ssize_t n = recvmsgCloexec(fd_, &msg, MSG_DONTWAIT);
  if (n > 0 && size_t(n) < size && !(msg.msg_flags & MSG_CTRUNC)) {
    KJ_IF_MAYBE(atEnd, readable_.atEndHint()) {
      if (!*atEnd) primed_ = readable_.whenBecomesReadable();
    }
  }
  return n;
}

kj::Promise<void> LinkStream::whenWriteDisconnected() {
  KJ_IF_MAYBE(fork, disconnected_) { return fork->addBranch(); }
  auto fork = readable_.whenWriteDisconnected().fork();
  auto branch = fork.addBranch();
  disconnected_ = kj::mv(fork);
  return branch;
}

// ---- writing -------------------------------------------------------------------------------

kj::Promise<void> LinkStream::write(const void* buffer, size_t size) {
  kj::ArrayPtr<const kj::byte> piece(static_cast<const kj::byte*>(buffer), size);
  return write(kj::arrayPtr(&piece, 1));  // the bytes are copied before this returns
}

kj::Promise<void> LinkStream::write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) {
  KJ_IF_MAYBE(e, failed_) { return kj::cp(*e); }
  if (outHead_ == out_.size()) out_.clear(), outHead_ = 0;
  for (auto& piece : pieces) out_.insert(out_.end(), piece.begin(), piece.end());
  if (pending() <= kGatherLimit) {
    if (!pumping_) scheduleFlush();
    return kj::READY_NOW;
  }
  if (!pumping_) {
    if (sendPending()) {
      KJ_IF_MAYBE(e, failed_) { return kj::cp(*e); }
      return kj::READY_NOW;
    }
    waitForRoom();
  }
  auto paf = kj::newPromiseAndFulfiller<void>();
  drainWaiters_.push_back(kj::mv(paf.fulfiller));
  return kj::mv(paf.promise);
}

// Everything written during one turn of the loop goes out together, once the loop is idle.
void LinkStream::scheduleFlush() {
  if (flushScheduled_) return;
  flushScheduled_ = true;
  tasks_.add(kj::evalLast([this]() {
    flushScheduled_ = false;
    if (!pumping_ && pending() > 0 && !sendPending()) waitForRoom();
  }));
}

// Sends without blocking. True once nothing is left to send (or sending failed: see failed_).
bool LinkStream::sendPending() {
  while (pending() > 0 && failed_ == nullptr) {
    struct iovec iov = {out_.data() + outHead_, pending()};
    struct msghdr msg = {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    ssize_t n = sendmsgNoSignal(fd_, &msg, MSG_DONTWAIT);
    if (n >= 0) {
      outHead_ += size_t(n);
      continue;
    }
    int error = errno;
    if (error == EINTR) continue;
    if (error == EAGAIN || error == EWOULDBLOCK) return false;
    fail(socketError("sendmsg", error));
  }
  if (failed_ == nullptr) {
    out_.clear();
    outHead_ = 0;
    if (out_.capacity() > 4 * kGatherLimit) out_.shrink_to_fit();  // a large message's copy goes
  }
  return true;
}

// Sends what it can; once everything is out, releases whoever waits for that.
void LinkStream::pump() {
  if (!sendPending()) return waitForRoom();
  pumping_ = false;
  writable_ = nullptr;  // stop watching for room: the peer's reads would wake us again
  writeFd_ = nullptr;
  auto waiters = kj::mv(drainWaiters_);
  drainWaiters_.clear();
  for (auto& w : waiters) {
    KJ_IF_MAYBE(e, failed_) { w->reject(kj::cp(*e)); }
    else { w->fulfill(); }
  }
}

// The socket is full (sendmsg() said EAGAIN): pump() again once it has room.
void LinkStream::waitForRoom() {
  pumping_ = true;
  if (writable_ == nullptr) {
    int copy;
    KJ_SYSCALL(copy = fcntl(fd_, F_DUPFD_CLOEXEC, 0));
    writeFd_ = kj::AutoCloseFd(copy);
    // Registered after the EAGAIN: if room appeared meanwhile, epoll reports it at once.
    writable_ = kj::heap<kj::UnixEventPort::FdObserver>(port_, copy, kj::UnixEventPort::FdObserver::OBSERVE_WRITE);
  }
  auto& observer = *KJ_ASSERT_NONNULL(writable_);
  tasks_.add(observer.whenBecomesWritable().then([this]() { pump(); }));
}

void LinkStream::fail(kj::Exception&& e) {
  if (failed_ == nullptr) failed_ = kj::mv(e);
  out_.clear();
  outHead_ = 0;
  if (pumping_) pump();  // releases the waiters with the error
}

void LinkStream::shutdownWrite() {
  if (!pumping_) sendPending();
  KJ_SYSCALL(::shutdown(fd_, SHUT_WR));
}

void LinkStream::getsockopt(int level, int option, void* value, kj::uint* length) {
  socklen_t len = *length;
  KJ_SYSCALL(::getsockopt(fd_, level, option, value, &len));
  *length = len;
}

// ---- whole messages --------------------------------------------------------------------------
//
// The framing is Cap'n Proto's standard one: a table of little-endian 32-bit words (segment
// count minus one, then each segment's size in words, padded to 8 bytes), then the segments.

namespace {
uint32_t get32(const kj::byte* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

void put32(kj::byte* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = kj::byte(v >> (8 * i));
}

size_t tableBytes(uint64_t segments) { return (4 + 4 * segments + 7) & ~size_t(7); }

// The segment count from a message's first word, refused where capnp's reader refuses it.
uint64_t segmentCount(const kj::byte* first) {
  uint64_t count = uint64_t(get32(first)) + 1;
  KJ_REQUIRE(count < 512, "Message has too many segments.");
  return count;
}

// The size of the whole message whose table is at `p` (complete), refused like capnp's own
// reader refuses it before allocating: nothing beyond the traversal limit.
size_t messageBytes(const kj::byte* p, const capnp::ReaderOptions& options) {
  uint64_t count = segmentCount(p), words = 0;
  for (uint64_t i = 0; i < count; ++i) words += get32(p + 4 + 4 * i);
  KJ_REQUIRE(words <= options.traversalLimitInWords,
             "Message is too large.  To increase the limit on the receiving end, see capnp::ReaderOptions.");
  return tableBytes(count) + words * sizeof(capnp::word);
}

kj::Maybe<kj::Own<capnp::MessageReader>> readerOver(kj::Array<capnp::word> words, const capnp::ReaderOptions& options) {
  kj::Own<capnp::MessageReader> reader = kj::heap<capnp::FlatArrayMessageReader>(words, options).attach(kj::mv(words));
  return kj::mv(reader);
}
}  // namespace

kj::Promise<kj::Maybe<kj::Own<capnp::MessageReader>>> LinkStream::readMessage(const capnp::ReaderOptions& options) {
  const kj::byte* p = buffer_.get() + start_;
  size_t have = end_ - start_;
  if (have >= 8 && have >= tableBytes(segmentCount(p))) {
    size_t size = messageBytes(p, options);
    if (have >= size) {
      auto words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
      memcpy(words.begin(), p, size);
      start_ += size;
      return readerOver(kj::mv(words), options);
    }
  }
  return readMessageSlowly(options);
}

// The message is not all buffered: read its table, then its segments straight into place.
kj::Promise<kj::Maybe<kj::Own<capnp::MessageReader>>> LinkStream::readMessageSlowly(capnp::ReaderOptions options) {
  auto first = kj::heapArray<kj::byte>(8);
  auto into = first.begin();
  return readMore(into, 8, 8, 0).then([this, options, first = kj::mv(first)](
                                          size_t n) mutable -> kj::Promise<kj::Maybe<kj::Own<capnp::MessageReader>>> {
    if (n == 0) return kj::Maybe<kj::Own<capnp::MessageReader>>(nullptr);
    KJ_REQUIRE(n == 8, "the link ended in the middle of a message");
    auto table = kj::heapArray<kj::byte>(tableBytes(segmentCount(first.begin())));
    memcpy(table.begin(), first.begin(), 8);
    size_t rest = table.size() - 8;
    auto into = table.begin() + 8;
    return readMore(into, rest, rest, 0).then([this, options, rest, table = kj::mv(table)](size_t got) mutable {
      KJ_REQUIRE(got == rest, "the link ended in the middle of a message");
      size_t size = messageBytes(table.begin(), options);
      auto words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
      memcpy(words.begin(), table.begin(), table.size());
      size_t body = size - table.size();
      auto into = reinterpret_cast<kj::byte*>(words.begin()) + table.size();
      return readMore(into, body, body, 0).then([options, body, words = kj::mv(words)](size_t got) mutable {
        KJ_REQUIRE(got == body, "the link ended in the middle of a message");
        return readerOver(kj::mv(words), options);
      });
    });
  });
}

kj::Promise<kj::Maybe<capnp::MessageReaderAndFds>> LinkMessageStream::tryReadMessage(
    kj::ArrayPtr<kj::AutoCloseFd>, capnp::ReaderOptions options, kj::ArrayPtr<capnp::word>) {
  return stream_->readMessage(options).then(
      [](kj::Maybe<kj::Own<capnp::MessageReader>> reader) -> kj::Maybe<capnp::MessageReaderAndFds> {
        KJ_IF_MAYBE(r, reader) { return capnp::MessageReaderAndFds{kj::mv(*r), nullptr}; }
        return nullptr;
      });
}

kj::Promise<void> LinkMessageStream::writeMessage(kj::ArrayPtr<const int> fds,
                                                  kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments) {
  KJ_REQUIRE(fds.size() == 0, "this link carries no file descriptors");
  KJ_REQUIRE(segments.size() > 0 && segments.size() < 512, "a message has 1 to 511 segments");
  kj::byte table[tableBytes(511)];
  memset(table, 0, tableBytes(segments.size()));  // the padding word, if any
  put32(table, uint32_t(segments.size() - 1));
  for (size_t i = 0; i < segments.size(); ++i) put32(table + 4 + 4 * i, uint32_t(segments[i].size()));
  kj::ArrayPtr<const kj::byte> pieces[512];
  pieces[0] = kj::arrayPtr(table, tableBytes(segments.size()));
  for (size_t i = 0; i < segments.size(); ++i) pieces[i + 1] = segments[i].asBytes();
  return stream_->write(kj::arrayPtr(pieces, segments.size() + 1));  // copies before it returns
}

kj::Promise<void> LinkMessageStream::writeMessages(
    kj::ArrayPtr<kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>>> messages) {
  if (messages.size() == 0) return kj::READY_NOW;
  return writeMessage(nullptr, messages[0]).then([this, messages]() mutable {
    return writeMessages(messages.slice(1, messages.size()));
  });
}

kj::Maybe<int> LinkMessageStream::getSendBufferSize() {
  int size = 0;
  kj::uint length = sizeof size;
  stream_->getsockopt(SOL_SOCKET, SO_SNDBUF, &size, &length);
  return size;
}

kj::Promise<void> LinkMessageStream::end() {
  stream_->shutdownWrite();
  return kj::READY_NOW;
}

kj::Own<capnp::MessageStream> wrapLinkSocket(kj::UnixEventPort& port, int fd) {
  return kj::heap<LinkMessageStream>(kj::heap<LinkStream>(port, fd));
}

}  // namespace pine
