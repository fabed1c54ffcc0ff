// Writing to a socket whose peer is gone fails with EPIPE instead of raising SIGPIPE, which
// would end the process (a worker or the broker may close its end at any time). Linux asks
// per call (MSG_NOSIGNAL), macOS per socket (SO_NOSIGPIPE): one file per platform.
#pragma once
#include <sys/socket.h>
#include <sys/types.h>

namespace pine {

// sendmsg(2) and send(2) without SIGPIPE; the same results.
ssize_t sendmsgNoSignal(int fd, const struct msghdr* msg, int flags);
ssize_t sendNoSignal(int fd, const void* data, size_t len, int flags);

}  // namespace pine
