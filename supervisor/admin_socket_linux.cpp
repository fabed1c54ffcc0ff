// shareSocketWithAdmins (admin_group.h) on Linux.
#include "supervisor/admin_group.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace pine {

void shareSocketWithAdmins(const std::string& path, gid_t gid) {
  // Linux: a descriptor of the name itself (a link stays a link), checked, then changed through
  // that descriptor, so what is checked is what changes.
  int fd = open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) failForAdmins("open", path);
  struct stat st;
  bool ok = fstat(fd, &st) == 0;
  if (ok && (!S_ISSOCK(st.st_mode) || st.st_nlink != 1)) {
    close(fd);
    throw std::runtime_error(path + " is not a socket with one name; it is not given to pine's admin group");
  }
  ok = ok && (st.st_gid == gid || fchownat(fd, "", (uid_t)-1, gid, AT_EMPTY_PATH) == 0) &&
       ((st.st_mode & 07777) == 0660 || chmod(("/proc/self/fd/" + std::to_string(fd)).c_str(), 0660) == 0);
  int e = errno;
  close(fd);
  errno = e;
  if (!ok) failForAdmins("give", path);
}

}  // namespace pine
