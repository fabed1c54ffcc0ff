// macOS (written for it, not compiled on a Mac here): no SOCK_CLOEXEC and no pipe2, so the
// flag is set right after the call (common/cloexec.h). A fork in another thread between the
// two would leak the descriptor into that child: pine's processes start children only from
// their event-loop thread, the one that makes these descriptors, and the one with threads of its
// own (pine-egress's transfers) starts none, so nothing forks in between.
#include "common/cloexec.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace pine {
namespace {

bool setFlags(int fd, bool nonblocking) {
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return false;
  if (!nonblocking) return true;
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

int closeBoth(int fds[2]) {
  int e = errno;
  ::close(fds[0]);
  ::close(fds[1]);
  errno = e;
  return -1;
}

// The new descriptor `fd` with its flags set, or -1 (and it closed).
int withFlags(int fd, bool nonblocking) {
  if (fd < 0 || setFlags(fd, nonblocking)) return fd;
  int e = errno;
  ::close(fd);
  errno = e;
  return -1;
}

}  // namespace

int socketCloexec(int domain, int type, int protocol, bool nonblocking) {
  return withFlags(::socket(domain, type, protocol), nonblocking);
}

int socketpairCloexec(int domain, int type, int protocol, int sv[2]) {
  if (::socketpair(domain, type, protocol, sv) != 0) return -1;
  return setFlags(sv[0], false) && setFlags(sv[1], false) ? 0 : closeBoth(sv);
}

int pipeCloexec(int fds[2]) {
  if (::pipe(fds) != 0) return -1;
  return setFlags(fds[0], false) && setFlags(fds[1], false) ? 0 : closeBoth(fds);
}

int acceptCloexec(int listenFd) { return withFlags(::accept(listenFd, nullptr, nullptr), false); }

ssize_t recvmsgCloexec(int fd, struct msghdr* msg, int flags) {
  ssize_t n = ::recvmsg(fd, msg, flags);
  if (n < 0 || msg->msg_control == nullptr) return n;  // without a control buffer none is received
  for (struct cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const int* fds = reinterpret_cast<const int*>(CMSG_DATA(c));
    for (size_t i = 0; i < count; ++i) (void)setFlags(fds[i], false);
  }
  return n;
}

}  // namespace pine
