// A connection of the control API that reads its socket itself, and reads again only once the
// socket has something. kj's stream reads at once when asked; after an answer, the next request
// has not arrived yet, so every request cost one read that failed (EAGAIN) before the wait for it.
// Here a read that returns less than it asked for (the socket is empty, FdObserver's documented
// rule) starts the wait for the next bytes in the same call, so the next read waits first; after a
// short read of kCheckAfter bytes or more, or one after a read that filled its buffer, the socket
// is asked first (FIONREAD), since bytes were seen left after such reads. Writes and everything else go to the stream it wraps.
#pragma once
#include <kj/async-io.h>
#include <kj/async-unix.h>
#include <kj/io.h>

#include <cstddef>

#include "broker/forwarding_stream.h"

namespace pine {

class ReadyReads final : public ForwardingStream {
 public:
  // `inner` must have a socket (getFd()); its reads are no longer used.
  ReadyReads(kj::Own<kj::AsyncIoStream> inner, kj::UnixEventPort& port);

  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override;

 private:
  static constexpr ssize_t kCheckAfter = 1024;  // a read this large asks whether bytes are left
  kj::Promise<size_t> readSome(kj::byte* buffer, size_t minBytes, size_t maxBytes, size_t got);

  int fd_;
  kj::AutoCloseFd watched_;  // a second descriptor of the socket: kj's stream watches the first
  kj::UnixEventPort::FdObserver observer_;
  kj::Maybe<kj::Promise<void>> ready_;  // armed when the socket was found empty
  bool lastFilled_ = false;             // the last read filled its buffer
};

}  // namespace pine
