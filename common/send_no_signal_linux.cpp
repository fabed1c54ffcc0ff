#include "common/send_no_signal.h"

namespace pine {

ssize_t sendmsgNoSignal(int fd, const struct msghdr* msg, int flags) { return ::sendmsg(fd, msg, flags | MSG_NOSIGNAL); }

ssize_t sendNoSignal(int fd, const void* data, size_t len, int flags) {
  return ::send(fd, data, len, flags | MSG_NOSIGNAL);
}

}  // namespace pine
