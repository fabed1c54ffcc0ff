// The worker link's message framing (LinkMessageStream over LinkStream), fed any bytes a hostile
// worker may write: the peer's end of a socketpair gets the input in pieces derived from it, and
// messages are read until the end. Properties: no crash; no allocation larger than the traversal
// limit allows (a message's size is refused before its buffer is made); every message returned
// can be traversed, as AnyPointer, within the reader's limits (exceptions, never a crash).
#include <capnp/any.h>
#include <capnp/message.h>
#include <fcntl.h>
#include <kj/async-io.h>
#include <kj/debug.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "common/link_stream.h"
#include "tests/fuzz/fuzz_check.h"
#include "common/cloexec.h"
#include "common/send_no_signal.h"

namespace {

constexpr uint64_t kTraversalWords = 1 << 16;  // 512 KiB: a message above it must be refused unallocated
// The largest single allocation a message may cost: its words, the segment table, and the link's
// own read buffer; anything above means a size was believed before it was checked.
constexpr size_t kMaxAllocation = kTraversalWords * 8 + 4096 + pine::LinkStream::kReadBuffer;

thread_local bool inTarget = false;  // the limit holds for the code under test, not for libFuzzer

}  // namespace

// Every operator new (kj::heapArray and capnp use it) is checked against the bound while an
// input runs. All the unaligned forms are replaced, with malloc and free, so that each pair matches.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"  // it cannot see that new is malloc here
#endif
static void* allocate(size_t size) {
  FUZZ_CHECK(!inTarget || size <= kMaxAllocation, "an allocation larger than the traversal limit allows");
  return malloc(size ? size : 1);
}
void* operator new(size_t size) {
  if (void* p = allocate(size)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return allocate(size); }
void operator delete(void* p) noexcept { free(p); }
void operator delete[](void* p) noexcept { free(p); }
void operator delete(void* p, size_t) noexcept { free(p); }
void operator delete[](void* p, size_t) noexcept { free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { free(p); }

namespace {

struct Loop {
  kj::AsyncIoContext io = kj::setupAsyncIo();
};

std::vector<size_t> pieces(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ull;
  std::vector<size_t> out;
  for (size_t at = 0; at < size;) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    size_t n = std::min<size_t>(size - at, (h >> 33) % 3 == 0 ? 1 + (h >> 40) % 16 : 1 + (h >> 40) % 20000);
    out.push_back(n);
    at += n;
  }
  return out;
}

// Reads messages until the end (or a refusal), traversing each.
kj::Promise<void> readAll(capnp::MessageStream& stream, capnp::ReaderOptions options, int& messages) {
  return stream.tryReadMessage(nullptr, options).then(
      [&stream, options, &messages](kj::Maybe<capnp::MessageReaderAndFds> m) -> kj::Promise<void> {
        KJ_IF_MAYBE(message, m) {
          messages++;
          FUZZ_CHECK(message->fds.size() == 0, "this link carries no file descriptors");
          uint64_t words = 0;
          for (uint i = 0; i < 512; i++) {
            auto segment = message->reader->getSegment(i);
            if (segment == nullptr) break;
            words += segment.size();
          }
          FUZZ_CHECK(words <= options.traversalLimitInWords, "a message returned is within the traversal limit");
          try {
            auto root = message->reader->getRoot<capnp::AnyPointer>();
            auto size = root.targetSize();  // walks every pointer, within the traversal and nesting limits
            FUZZ_CHECK(size.wordCount <= options.traversalLimitInWords, "a traversal stays within its limit");
          } catch (kj::Exception&) {
            // A malformed message is refused by its reader: what the RPC system would see.
          }
          return readAll(stream, options, messages);
        }
        return kj::READY_NOW;
      });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Loop* loop = new Loop;  // one event loop for all inputs
  auto& ws = loop->io.waitScope;
  int fd[2];
  FUZZ_CHECK(pine::socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, fd) == 0, "a socketpair");
  FUZZ_CHECK(fcntl(fd[0], F_SETFL, O_NONBLOCK) == 0, "a non-blocking writer");
  capnp::ReaderOptions options;
  options.traversalLimitInWords = kTraversalWords;
  options.nestingLimit = 32;  // as RpcLink sets it
  int messages = 0;
  inTarget = true;
  {
    auto stream = pine::wrapLinkSocket(loop->io.unixEventPort, fd[1]);
    bool ended = false;
    auto reading = kj::evalNow([&]() { return readAll(*stream, options, messages); })
                       .catch_([](kj::Exception&&) {})  // a refused frame ends the link: RpcLink drops it
                       .then([&ended]() { ended = true; })
                       .eagerlyEvaluate(nullptr);
    // Write the pieces as the socket takes them, letting the reader run in between.
    size_t at = 0;
    for (size_t n : pieces(data, size)) {
      for (size_t done = 0; done < n && !ended;) {
        ssize_t w = pine::sendNoSignal(fd[0], data + at + done, n - done, 0);
        if (w > 0) {
          done += size_t(w);
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
          ws.poll();  // the socket is full: the reader takes some, or it has refused the stream
        } else {
          break;  // the reader has gone
        }
      }
      at += n;
      ws.poll();
      if (ended) break;
    }
    shutdown(fd[0], SHUT_WR);
    // At the end of the bytes the reader ends too: cleanly, or refusing a message cut short.
    auto& timer = loop->io.provider->getTimer();
    bool inTime = timer.timeoutAfter(10 * kj::SECONDS, kj::mv(reading)).then([]() { return true; }, [](kj::Exception&&) {
      return false;
    }).wait(ws);
    FUZZ_CHECK(inTime && ended, "the reader ends when the bytes end");
  }
  inTarget = false;
  close(fd[0]);
  FUZZ_CHECK(size_t(messages) * 8 <= size, "every message returned is at least a word of input");
  return 0;
}
