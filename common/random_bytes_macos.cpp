// macOS (written for it, not compiled on a Mac here): arc4random_buf never fails nor blocks.
#include "common/random_bytes.h"

#include <stdlib.h>

namespace pine {

bool randomBytes(void* out, size_t len, bool) noexcept {
  arc4random_buf(out, len);
  return true;
}

}  // namespace pine
