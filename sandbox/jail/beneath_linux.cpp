#include "sandbox/jail/beneath.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace pine::sandbox::beneath {

int pathOnly() { return O_PATH; }

long open(int dirfd, const std::string& path, int flags, mode_t mode, bool noLinks) {
  struct open_how how{};
  how.flags = unsigned(flags);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (noLinks ? RESOLVE_NO_SYMLINKS : 0);
  long fd;
  // RESOLVE_BENEATH answers EAGAIN when a rename races with ".." in a link
  // target; retrying a few times is what the kernel asks for.
  for (int tries = 0; tries < 8; ++tries) {
    fd = syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how);
    if (fd >= 0 || errno != EAGAIN) break;
  }
  return fd;
}

bool available(int rootFd) {
  long fd = open(rootFd, ".", O_PATH | O_CLOEXEC, 0, false);
  if (fd < 0) return false;
  ::close(int(fd));
  return true;
}

std::optional<std::string> fdPath(int fd) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char buf[PATH_MAX + 1];
  ssize_t n = readlink(link, buf, PATH_MAX);
  if (n <= 0 || n >= PATH_MAX || buf[0] != '/') return std::nullopt;
  std::string path(buf, size_t(n));
  struct stat st;
  // An unlinked file reads as "path (deleted)": it is no longer at any path.
  if (fstat(fd, &st) == 0 && st.st_nlink == 0) return std::nullopt;
  return path;
}

}  // namespace pine::sandbox::beneath
