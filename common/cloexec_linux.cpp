// Linux: the flag is set by the call that makes the descriptor (common/cloexec.h).
#include "common/cloexec.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace pine {

int socketCloexec(int domain, int type, int protocol, bool nonblocking) {
  return ::socket(domain, type | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), protocol);
}

int socketpairCloexec(int domain, int type, int protocol, int sv[2]) {
  return ::socketpair(domain, type | SOCK_CLOEXEC, protocol, sv);
}

int pipeCloexec(int fds[2]) { return ::pipe2(fds, O_CLOEXEC); }

int acceptCloexec(int listenFd) { return ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC); }

ssize_t recvmsgCloexec(int fd, struct msghdr* msg, int flags) { return ::recvmsg(fd, msg, flags | MSG_CMSG_CLOEXEC); }

}  // namespace pine
