// The home's folders, modes, control token and single-instance lock: pined is
// the only process that creates them.
#pragma once
#include <string>

#include "common/home.h"

namespace pine {

// Creates what is absent (home and data/ mode 700) and tightens data/ and its
// logs/ to 700. Throws with the path and the reason.
void prepareHome(const Home& home);

// data/http-token: 32 random bytes as hex, mode 600, made once and kept.
void ensureControlToken(const Home& home);

// Takes data/pined.lock for the life of the process. Throws, naming the pid
// that holds it, when another pined runs on this home.
int lockHome(const Home& home);

}  // namespace pine
