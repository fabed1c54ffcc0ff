// Who is at the other end of a connected unix socket, as the kernel says: the
// platform's one job here (SO_PEERCRED and SO_PEERGROUPS on Linux, LOCAL_PEERCRED
// on macOS). Nothing the client sends is ever part of it.
#pragma once
#include <sys/types.h>

#include <optional>
#include <vector>

namespace pine {

struct PeerCredentials {
  uid_t uid = 0;
  std::vector<gid_t> groups;  // the peer's effective gid and its supplementary groups, when it connected
};

// Empty when the kernel does not say (not a unix socket, or the call failed).
std::optional<PeerCredentials> peerCredentials(int fd);

}  // namespace pine
