// Random bytes from the kernel: getrandom on Linux, arc4random_buf on macOS (one file per
// platform, in the text library so that outside_text needs nothing else).
#pragma once
#include <cstddef>

namespace pine {

// Fills `out`; false when the system had none to give. `mayWait`: false never blocks (Linux
// early in boot, before the pool is ready), so a caller with a fallback can take it.
bool randomBytes(void* out, size_t len, bool mayWait = true) noexcept;

}  // namespace pine
