#include "common/unix_socket.h"
#include "common/cloexec.h"

#include <kj/debug.h>
#include <kj/io.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace pine {

kj::Own<kj::ConnectionReceiver> listenUnixSocket(kj::LowLevelAsyncIoProvider& lowLevel, const std::string& path) {
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  KJ_REQUIRE(path.size() < sizeof addr.sun_path, "the home's path is too long for a unix socket", path);
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd;
  KJ_SYSCALL(fd = socketCloexec(AF_UNIX, SOCK_STREAM, 0, true));
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
std::optional<SocketAccess> gAccess;
}  // namespace

void setSocketAccess(SocketAccess access) { gAccess = std::move(access); }

const SocketAccess& socketAccess() {
  if (!gAccess) gAccess = SocketAccess{getuid(), std::nullopt, ""};
  return *gAccess;
}

PeerVerdict judgePeer(const std::optional<PeerCredentials>& peer, const SocketAccess& access) {
  PeerVerdict v;
  if (!peer) {
    v.reason = "the kernel did not say who connected";
    return v;
  }
  v.uid = peer->uid;
  if (peer->uid == access.ownerUid) {
    v.allowed = true;
    return v;
  }
  if (access.adminGid) {
    for (gid_t g : peer->groups)
      if (g == *access.adminGid) {
        v.allowed = true;
        return v;
      }
    v.reason = "uid " + std::to_string(peer->uid) + " is not pine's (uid " + std::to_string(access.ownerUid) +
               ") and was not in pine's admin group " + access.adminName + " (gid " + std::to_string(*access.adminGid) +
               ") when it connected: ask for `usermod -aG " + access.adminName +
               " YOU` (macOS: dseditgroup), and if you were added already, log in again so your processes have the group";
  } else {
    v.reason = "uid " + std::to_string(peer->uid) + " is not pine's (uid " + std::to_string(access.ownerUid) +
               "), and pined was started without an admin group (pined --admin-group)";
  }
  return v;
}

PeerVerdict checkPeer(int fd) { return judgePeer(peerCredentials(fd), socketAccess()); }

bool processHasGroup(gid_t gid) {
  if (getegid() == gid) return true;
  int n = getgroups(0, nullptr);
  if (n <= 0) return false;
  std::vector<gid_t> groups((size_t)n);
  n = getgroups(n, groups.data());
  for (int i = 0; i < n; ++i)
    if (groups[(size_t)i] == gid) return true;
  return false;
}

}  // namespace pine
