// macOS (written for it, not compiled on a Mac here): no close_range, so every number up to
// the descriptor limit is closed; async-signal-safe, as a child between fork and exec needs.
#include <unistd.h>

#include "common/fd.h"

namespace pine {

void closeFrom(int lowest) noexcept {
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536) max = 65536;
  for (long fd = lowest; fd < max; ++fd) close((int)fd);
}

}  // namespace pine
