// macOS (written for it, not compiled on a Mac here): no MSG_NOSIGNAL; SO_NOSIGPIPE on the
// socket does the same for every later write. Setting it again is harmless.
#include "common/send_no_signal.h"

namespace pine {
namespace {

void noSigpipe(int fd) {
  int on = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, sizeof on);
}

}  // namespace

ssize_t sendmsgNoSignal(int fd, const struct msghdr* msg, int flags) {
  noSigpipe(fd);
  return ::sendmsg(fd, msg, flags);
}

ssize_t sendNoSignal(int fd, const void* data, size_t len, int flags) {
  noSigpipe(fd);
  return ::send(fd, data, len, flags);
}

}  // namespace pine
