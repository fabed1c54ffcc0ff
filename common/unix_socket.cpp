#include "common/unix_socket.h"

#include <kj/debug.h>
#include <kj/io.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace pine {

kj::Own<kj::ConnectionReceiver> listenUnixSocket(kj::LowLevelAsyncIoProvider& lowLevel, const std::string& path) {
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  KJ_REQUIRE(path.size() < sizeof addr.sun_path, "the home's path is too long for a unix socket", path);
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd;
  KJ_SYSCALL(fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  kj::AutoCloseFd owned(fd);
  unlink(path.c_str());
  KJ_SYSCALL(bind(fd, (struct sockaddr*)&addr, sizeof addr), path);
  KJ_SYSCALL(chmod(path.c_str(), 0600), path);
  KJ_SYSCALL(listen(fd, 64));
  return lowLevel.wrapListenSocketFd(owned.release(), kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP |
                                                          kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC |
                                                          kj::LowLevelAsyncIoProvider::ALREADY_NONBLOCK);
}

namespace {
bool gOwnerSet = false;
unsigned gOwnerUid = 0;
}  // namespace

void setOwnerUid(unsigned uid) {
  gOwnerSet = true;
  gOwnerUid = uid;
}

bool peerIsOwner(int fd, unsigned* peerUid) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  if (peerUid) *peerUid = cred.uid;
  return cred.uid == (gOwnerSet ? gOwnerUid : getuid());
}

std::string programDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  std::string s(buf);
  return s.substr(0, s.find_last_of('/'));
}

}  // namespace pine
