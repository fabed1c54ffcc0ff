// Before pined starts anything under the Seatbelt backend it runs /usr/bin/true under a profile
// made by the same generator, through the same sandbox-exec and spawnChild: a missing
// sandbox-exec, or one that refuses pine's profiles, stops pined at start with the reason
// (stderr and the audit log) instead of failing every task later. Nothing starts unconfined.
#pragma once
#include "sandbox/backend.h"

namespace pine {

// Throws std::runtime_error with sandbox-exec's own words when the check fails.
void checkSeatbeltBackend(const sandbox::BackendChoice& choice);

}  // namespace pine
