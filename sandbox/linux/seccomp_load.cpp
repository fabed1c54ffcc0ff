// The child-side half of the seccomp part: loading the program the parent
// prepared. No libseccomp here, so that pine-launch does not link it.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "sandbox/linux/seccomp_filter.h"

namespace pine::sandbox::seccomp {

int loadInChild(const std::vector<sock_filter>& program) noexcept {
  if (program.empty() || program.size() > 0xffff) return EINVAL;
  sock_fprog fprog;
  fprog.len = (unsigned short)program.size();
  fprog.filter = const_cast<sock_filter*>(program.data());
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) return errno;
  return 0;
}

}  // namespace pine::sandbox::seccomp
