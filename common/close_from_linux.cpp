#include <sys/syscall.h>
#include <unistd.h>

#include "common/fd.h"

namespace pine {

void closeFrom(int lowest) noexcept {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, (unsigned)lowest, ~0U, 0) == 0) return;
#endif
  // Old kernels: close what we can find. /proc may be absent in a sandbox, so fall back to a bound.
  long max = sysconf(_SC_OPEN_MAX);
  if (max < 0 || max > 65536) max = 65536;
  for (long fd = lowest; fd < max; ++fd) close((int)fd);
}

}  // namespace pine
