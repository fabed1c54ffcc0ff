// The owner's sockets in the home (pine.sock, pined.sock): made mode 600 (pined
// opens them to pine's admin group, supervisor/admin_group.h) and served only to
// pine's uid and the members of that group, as the kernel names the peer.
#pragma once
#include <kj/async-io.h>
#include <sys/types.h>

#include <optional>
#include <string>

#include "common/peer_credentials.h"

namespace pine {

// Binds `path` (replacing a stale socket), sets mode 600 and listens.
kj::Own<kj::ConnectionReceiver> listenUnixSocket(kj::LowLevelAsyncIoProvider& lowLevel, const std::string& path);

// Who may use the owner's sockets: pined's uid, and the members of pine's admin group when
// pined was given one (pined --admin-group). The broker, which runs under a uid of its own
// when pined is root, serves pined's: pined passes both (pine-broker --owner-uid, --admin-group).
struct SocketAccess {
  uid_t ownerUid = 0;
  std::optional<gid_t> adminGid;
  std::string adminName;  // for messages
};
void setSocketAccess(SocketAccess access);  // for this process; until called: our own uid, no group
const SocketAccess& socketAccess();

struct PeerVerdict {
  bool allowed = false;
  uid_t uid = (uid_t)-1;  // the peer's, when the kernel said
  std::string reason;     // why it was refused, in words for the log and the person refused
};
// The rule alone: the peer's uid is the owner's, or its groups (the kernel's list) hold the admin gid.
PeerVerdict judgePeer(const std::optional<PeerCredentials>& peer, const SocketAccess& access);
// The rule applied to a connected socket with this process's access.
PeerVerdict checkPeer(int fd);

// Whether this process has `gid` (its effective gid or a supplementary group).
bool processHasGroup(gid_t gid);

// The folder this program was started from, where pine's programs sit together; one file per
// platform (common/meson.build): program_dir_linux.cpp (/proc/self/exe), program_dir_macos.cpp.
std::string programDir();

}  // namespace pine
