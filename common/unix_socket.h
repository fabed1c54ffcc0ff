// The owner's sockets in the home (pine.sock, pined.sock): made mode 600 and
// served only to peers of our own uid.
#pragma once
#include <kj/async-io.h>

#include <string>

namespace pine {

// Binds `path` (replacing a stale socket), sets mode 600 and listens.
kj::Own<kj::ConnectionReceiver> listenUnixSocket(kj::LowLevelAsyncIoProvider& lowLevel, const std::string& path);

// True when the peer of this connected unix socket runs under the owner's uid (ours, unless
// setOwnerUid said otherwise); `peerUid` gets its uid.
bool peerIsOwner(int fd, unsigned* peerUid = nullptr);

// The broker, which runs under a uid of its own when pined is root, serves pined's uid: pined
// passes it (pine-broker --owner-uid).
void setOwnerUid(unsigned uid);

// The folder this program was started from (/proc/self/exe), where pine's programs sit together.
std::string programDir();

}  // namespace pine
