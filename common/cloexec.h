// Descriptors that never reach a program pine execs, made with the flag set at creation
// where the system can (Linux: SOCK_CLOEXEC, pipe2) and set right after elsewhere (macOS:
// fcntl). One file per platform, chosen in common/meson.build. Each returns what the
// system call it stands for returns (-1 with errno on failure).
#pragma once
#include <sys/socket.h>
#include <sys/types.h>

namespace pine {

// socket(2), close-on-exec; `nonblocking` as SOCK_NONBLOCK.
int socketCloexec(int domain, int type, int protocol, bool nonblocking = false);
// socketpair(2), both ends close-on-exec.
int socketpairCloexec(int domain, int type, int protocol, int sv[2]);
// pipe(2), both ends close-on-exec.
int pipeCloexec(int fds[2]);
// accept(2) of a connection, close-on-exec, its address not wanted.
int acceptCloexec(int listenFd);
// recvmsg(2); every descriptor it receives (SCM_RIGHTS in msg's control buffer) close-on-exec.
ssize_t recvmsgCloexec(int fd, struct msghdr* msg, int flags);

}  // namespace pine
