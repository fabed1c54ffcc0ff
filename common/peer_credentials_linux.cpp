// Linux: SO_PEERCRED for the uid and gid, SO_PEERGROUPS (Linux 4.13) for the
// supplementary groups. Both are the credentials the peer had at connect().
#include <sys/socket.h>

#include <cerrno>

#include "common/peer_credentials.h"

namespace pine {

std::optional<PeerCredentials> peerCredentials(int fd) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
  PeerCredentials out;
  out.uid = cred.uid;
  out.groups.push_back(cred.gid);
  std::vector<gid_t> groups(64);
  for (;;) {
    len = (socklen_t)(groups.size() * sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) break;
    // ERANGE: len says how much room the list needs.
    if (errno != ERANGE || len <= groups.size() * sizeof(gid_t)) return std::nullopt;
    groups.resize(len / sizeof(gid_t));
  }
  out.groups.insert(out.groups.end(), groups.begin(), groups.begin() + len / sizeof(gid_t));
  return out;
}

}  // namespace pine
