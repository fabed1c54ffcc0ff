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

// Group `gid` and `mode` on a folder or file reached without following a link.
void share(const std::string& path, gid_t gid, mode_t mode, bool mustExist) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT && !mustExist) return;
    failForAdmins("open", path);
  }
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && (st.st_gid == gid || fchown(fd, (uid_t)-1, gid) == 0) &&
            ((st.st_mode & 07777) == mode || fchmod(fd, mode) == 0);
  int e = errno;
  close(fd);
  errno = e;
  if (!ok) failForAdmins("give", path);
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

[[noreturn]] void failForAdmins(const std::string& what, const std::string& path) {
  throw std::runtime_error("cannot " + what + " " + path + " for pine's admin group: " + strerror(errno));
}

}  // namespace pine
