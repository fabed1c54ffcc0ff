// pined's own socket, <home>/pined.sock (Cap'n Proto, proto/owner.capnp): what must not pass
// through the broker (secret values) and the request to stop pined.
#pragma once
#include <string>

namespace pine {

// A connected socket, or throws saying why pined cannot be reached (not running, no access).
int connectOwnerSocket(const std::string& home);
// Whether no pined listens on the home: its socket is missing or refuses (a stale one).
bool pinedIsDown(const std::string& home);

}  // namespace pine
