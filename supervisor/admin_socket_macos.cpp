// shareSocketWithAdmins (admin_group.h) on macOS: written for it, not compiled on a Mac here.
#include "supervisor/admin_group.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace pine {

void shareSocketWithAdmins(const std::string& path, gid_t gid) {
  // macOS: no O_PATH; lchown and fchmodat(AT_SYMLINK_NOFOLLOW) never follow a link.
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) failForAdmins("stat", path);
  if (!S_ISSOCK(st.st_mode) || st.st_nlink != 1)
    throw std::runtime_error(path + " is not a socket with one name; it is not given to pine's admin group");
  if (lchown(path.c_str(), (uid_t)-1, gid) != 0 || fchmodat(AT_FDCWD, path.c_str(), 0660, AT_SYMLINK_NOFOLLOW) != 0)
    failForAdmins("give", path);
}

}  // namespace pine
