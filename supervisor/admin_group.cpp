#include "supervisor/admin_group.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace pine {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error("cannot " + what + " " + path + " for pine's admin group: " + strerror(errno));
}

// Group `gid` and `mode` on a folder or file reached without following a link.
void share(const std::string& path, gid_t gid, mode_t mode, bool mustExist) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT && !mustExist) return;
    fail("open", path);
  }
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && (st.st_gid == gid || fchown(fd, (uid_t)-1, gid) == 0) &&
            ((st.st_mode & 07777) == mode || fchmod(fd, mode) == 0);
  int e = errno;
  close(fd);
  errno = e;
  if (!ok) fail("give", path);
}

}  // namespace

SocketAccess resolveAdminGroup(const std::string& name) {
  struct group* gr = getgrnam(name.c_str());
  if (!gr)
    throw std::runtime_error("--admin-group " + name + ": there is no such group; create it (Linux: groupadd --system " +
                             name + "; scripts/service/install-linux does) or leave the option out");
  if (geteuid() == 0)
    throw std::runtime_error("--admin-group " + name +
                             " is for a pined that runs as a service account; as root, the broker and the workers have "
                             "uids of their own that the group's sockets would not reach. Run pined as its service "
                             "account (scripts/service/install-linux), or as root without --admin-group");
  if (!processHasGroup(gr->gr_gid)) {
    struct passwd* pw = getpwuid(geteuid());
    std::string me = pw ? pw->pw_name : std::to_string(geteuid());
    throw std::runtime_error("--admin-group " + name + ": pined runs as " + me +
                             ", which is not in that group, so it cannot give the group its sockets and logs: "
                             "usermod -aG " + name + " " + me + ", then start pined again");
  }
  return SocketAccess{geteuid(), gr->gr_gid, name};
}

void shareHomeWithAdmins(const Home& home, gid_t gid) {
  share(home.root, gid, 0750, true);
  share(home.data(), gid, 0750, true);
  share(home.logs(), gid, 02750, true);
  share(home.token(), gid, 0640, false);
  // The logs there before: pined's, the broker's, stderr and the audit log.
  for (const char* role : {"pined", "broker", "stderr"}) share(home.logFile(role), gid, 0640, false);
  share(home.audit(), gid, 0640, false);
}

void shareSocketWithAdmins(const std::string& path, gid_t gid) {
#ifdef O_PATH
  // Linux: a descriptor of the name itself (a link stays a link), checked, then changed through
  // that descriptor, so what is checked is what changes.
  int fd = open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) fail("open", path);
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
  if (!ok) fail("give", path);
#else
  // macOS: no O_PATH; lchown and fchmodat(AT_SYMLINK_NOFOLLOW) never follow a link.
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) fail("stat", path);
  if (!S_ISSOCK(st.st_mode) || st.st_nlink != 1)
    throw std::runtime_error(path + " is not a socket with one name; it is not given to pine's admin group");
  if (lchown(path.c_str(), (uid_t)-1, gid) != 0 || fchmodat(AT_FDCWD, path.c_str(), 0660, AT_SYMLINK_NOFOLLOW) != 0)
    fail("give", path);
#endif
}

}  // namespace pine
