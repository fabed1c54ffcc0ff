// macOS: LOCAL_PEERCRED gives a struct xucred with the peer's uid and up to
// NGROUPS (16) groups, the effective gid first, as they were at connect().
#include <sys/socket.h>
#include <sys/ucred.h>
#include <sys/un.h>

#include "common/peer_credentials.h"

namespace pine {

std::optional<PeerCredentials> peerCredentials(int fd) {
  struct xucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_LOCAL, LOCAL_PEERCRED, &cred, &len) != 0 || cred.cr_version != XUCRED_VERSION)
    return std::nullopt;
  PeerCredentials out;
  out.uid = cred.cr_uid;
  for (int i = 0; i < cred.cr_ngroups && i < NGROUPS; ++i) out.groups.push_back(cred.cr_groups[i]);
  return out;
}

}  // namespace pine
