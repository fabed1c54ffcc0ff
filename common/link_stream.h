// The stream under a link that passes no file descriptors (worker to broker): LinkStream,
// the bytes, and LinkMessageStream, Cap'n Proto's messages over them.
//
// kj's own socket stream spends more system calls and wake-ups on a Cap'n Proto call than it
// needs, and on a VM where each system call is dear that is most of a call's cost:
//  - it reads a message's segment table and its segments with separate read()s: LinkStream
//    reads into a buffer, so a message (or several) is one recvmsg();
//  - it watches the socket for writability all the time, so with edge-triggered epoll every
//    read the peer makes wakes our loop for nothing: LinkStream watches writability only while
//    the socket is full;
//  - it writes each message with its own system call: LinkStream gathers the small messages
//    of one turn of the event loop (a call and the previous call's Finish) into one sendmsg();
//  - after each message it tries one more read() that fails with EAGAIN before it waits: a
//    read that returned less than asked has already shown the socket empty, so LinkStream
//    waits for the next edge at once;
//  - capnp's message stream over it makes three reads and their promises per message (first
//    word, segment table, segments): a message already in LinkStream's buffer is handed over
//    whole, checked as capnp's reader checks it (segment count, traversal limit).
#pragma once
#include <capnp/serialize-async.h>
#include <kj/async-io.h>
#include <kj/async-unix.h>
#include <kj/io.h>

#include <memory>
#include <vector>

namespace pine {

class LinkStream final : public kj::AsyncIoStream, private kj::TaskSet::ErrorHandler {
 public:
  // Takes ownership of `fd` (a connected stream socket); makes it non-blocking and close-on-exec.
  LinkStream(kj::UnixEventPort& port, int fd);
  ~LinkStream() noexcept(false);
  KJ_DISALLOW_COPY(LinkStream);

  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override;
  kj::Promise<void> write(const void* buffer, size_t size) override;
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override;
  kj::Promise<void> whenWriteDisconnected() override;
  void shutdownWrite() override;
  void getsockopt(int level, int option, void* value, kj::uint* length) override;  // for SO_SNDBUF
  kj::Maybe<int> getFd() const override { return fd_.get(); }

  // One whole Cap'n Proto message (null at a clean end of stream). One that is already in the
  // buffer becomes a reader at once, without the three reads (first word, segment table,
  // segments) and their promises that capnp's own AsyncIoMessageStream spends on each.
  kj::Promise<kj::Maybe<kj::Own<capnp::MessageReader>>> readMessage(const capnp::ReaderOptions& options);

  static constexpr size_t kReadBuffer = 16 * 1024;
  // Messages are copied and sent together while this much at most is waiting to go out; above
  // it, write() resolves only once the socket has taken everything (back-pressure).
  static constexpr size_t kGatherLimit = 64 * 1024;

 private:
  kj::Promise<size_t> readMore(kj::byte* out, size_t minBytes, size_t maxBytes, size_t got);
  ssize_t receive(void* into, size_t size);
  size_t take(kj::byte* out, size_t max);
  kj::Promise<kj::Maybe<kj::Own<capnp::MessageReader>>> readMessageSlowly(capnp::ReaderOptions options);

  size_t pending() const { return out_.size() - outHead_; }
  void scheduleFlush();
  void pump();
  void waitForRoom();
  bool sendPending();
  void fail(kj::Exception&& e);
  void taskFailed(kj::Exception&& e) override { fail(kj::mv(e)); }

  kj::UnixEventPort& port_;
  kj::AutoCloseFd fd_;
  kj::UnixEventPort::FdObserver readable_;

  // Reading.
  std::unique_ptr<kj::byte[]> buffer_;
  size_t start_ = 0, end_ = 0;  // buffered bytes not yet handed out
  bool eof_ = false;
  // Armed right after a read that emptied the socket, in the same turn of the loop, so that
  // the next read can wait for the edge without first failing a read() with EAGAIN.
  kj::Maybe<kj::Promise<void>> primed_;
  kj::Maybe<kj::ForkedPromise<void>> disconnected_;

  // Writing.
  std::vector<kj::byte> out_;
  size_t outHead_ = 0;          // out_[outHead_..] is not sent yet
  bool flushScheduled_ = false;
  bool pumping_ = false;        // the socket was full; pump() goes on when it has room
  kj::Maybe<kj::Exception> failed_;
  std::vector<kj::Own<kj::PromiseFulfiller<void>>> drainWaiters_;
  // Only while the socket is full: a duplicate of fd_ watched for writability (epoll registers
  // each descriptor once, and fd_ is registered for reading alone).
  kj::AutoCloseFd writeFd_;
  kj::Maybe<kj::Own<kj::UnixEventPort::FdObserver>> writable_;

  kj::TaskSet tasks_;  // last, so that it goes first
};

// Cap'n Proto's message stream over a LinkStream, for TwoPartyVatNetwork.
class LinkMessageStream final : public capnp::MessageStream {
 public:
  explicit LinkMessageStream(kj::Own<LinkStream> stream) : stream_(kj::mv(stream)) {}

  kj::Promise<kj::Maybe<capnp::MessageReaderAndFds>> tryReadMessage(kj::ArrayPtr<kj::AutoCloseFd> fdSpace,
                                                                     capnp::ReaderOptions options,
                                                                     kj::ArrayPtr<capnp::word> scratch) override;
  kj::Promise<void> writeMessage(kj::ArrayPtr<const int> fds,
                                 kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments) override;
  kj::Promise<void> writeMessages(kj::ArrayPtr<kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>>> messages) override;
  kj::Maybe<int> getSendBufferSize() override;
  kj::Promise<void> end() override;

 private:
  kj::Own<LinkStream> stream_;
};

// A LinkMessageStream over `fd`, for RpcLink's constructor for links without fds.
kj::Own<capnp::MessageStream> wrapLinkSocket(kj::UnixEventPort& port, int fd);

}  // namespace pine
