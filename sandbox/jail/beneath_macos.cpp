// macOS (written for it, not compiled on a Mac here): no openat2, so the jail takes its
// fallback (realpath, open without following the last link, then this fdPath and a dev+inode
// comparison); F_GETPATH names an open file.
#include "sandbox/jail/beneath.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include <cerrno>

namespace pine::sandbox::beneath {

int pathOnly() { return O_RDONLY; }

bool available(int) { return false; }

long open(int, const std::string&, int, mode_t, bool) {
  errno = ENOSYS;
  return -1;
}

std::optional<std::string> fdPath(int fd) {
  char buf[PATH_MAX];
  if (fcntl(fd, F_GETPATH, buf) != 0) return std::nullopt;
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_nlink == 0) return std::nullopt;
  return std::string(buf);
}

}  // namespace pine::sandbox::beneath
