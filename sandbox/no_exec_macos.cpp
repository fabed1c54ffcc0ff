// macOS (written for it, not compiled on a Mac here): the broker's Seatbelt profile allows no
// exec but the program's own, so the promise is already kept (sandbox/no_exec.h).
#include "sandbox/no_exec.h"

namespace pine::sandbox {

int forbidExec() noexcept { return 0; }

}  // namespace pine::sandbox
