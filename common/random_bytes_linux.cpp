#include "common/random_bytes.h"

#include <sys/random.h>

#include <cerrno>

namespace pine {

bool randomBytes(void* out, size_t len, bool mayWait) noexcept {
  auto* p = static_cast<unsigned char*>(out);
  size_t got = 0;
  while (got < len) {
    ssize_t n = getrandom(p + got, len - got, mayWait ? 0 : GRND_NONBLOCK);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += size_t(n);
  }
  return true;
}

}  // namespace pine
