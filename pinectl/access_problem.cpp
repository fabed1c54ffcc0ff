#include "pinectl/access_problem.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/account_groups.h"
#include "common/unix_socket.h"

namespace pine {
namespace {

std::string userName(uid_t uid) {
  struct passwd* pw = getpwuid(uid);
  return pw ? pw->pw_name : "uid " + std::to_string(uid);
}

std::string groupName(gid_t gid) {
  struct group* gr = getgrgid(gid);
  return gr ? gr->gr_name : "gid " + std::to_string(gid);
}

// The first folder on the way to `path` (or `path` itself) this process may not pass or open.
std::string blocker(const std::string& home, const std::string& path, struct stat* st) {
  std::string at = home;
  while (!at.empty()) {
    if (stat(at.c_str(), st) == 0 && access(at.c_str(), X_OK) != 0) return at;
    auto slash = at.find_last_of('/');
    if (slash == 0 || slash == std::string::npos) break;
    at = at.substr(0, slash);
  }
  if (stat(path.c_str(), st) == 0) return path;
  return "";
}

}  // namespace

std::string describeAccessProblem(const std::string& home, const std::string& path, int err) {
  struct stat st;
  const std::string where = "pinectl looks at --home, then $PINE_HOME, then ~/.pine, then the service's home";
  if (err == ENOENT || err == ECONNREFUSED || err == ENOTDIR) {
    if (stat(home.c_str(), &st) != 0 && errno == ENOENT)
      return "there is no pine home at " + home + " (" + where + ")";
    if (err == ECONNREFUSED || (stat(home.c_str(), &st) == 0 && path.find(".sock") != std::string::npos))
      return "pined is not running on " + home + " (" + path + (err == ECONNREFUSED ? " is left from an earlier run" : " does not exist") +
             "): start it (systemctl start pine, launchctl kickstart system/org.pine.pined, or pined --home " + home + ")";
    return path + " does not exist: has pined run on " + home + "?";
  }
  if (err != EACCES && err != EPERM) return path + ": " + strerror(err);
  std::string denied = blocker(home, path, &st);
  std::string me = userName(getuid());
  if (denied.empty()) return "permission denied on " + path + " for " + me;
  char mode[8];
  snprintf(mode, sizeof mode, "%o", (unsigned)(st.st_mode & 0777));
  std::string owner = userName(st.st_uid), group = groupName(st.st_gid);
  std::string what = denied + " belongs to " + owner + " and the group " + group + " (mode " + mode + ")";
  if (processHasGroup(st.st_gid))
    return "permission denied on " + path + " although you (" + me + ") are in " + group + ": " + what +
           "; pined gives its admin group read access at start, so restart it (or check its --admin-group)";
  if (accountHasGroup(st.st_gid))
    return "permission denied on " + path + ": " + what + ". You (" + me + ") were added to " + group +
           " after this login began: log in again (or run `newgrp " + group + "` in this shell)";
  return "permission denied on " + path + ": " + what + ", and you (" + me + ") are not in " + group +
         ". pine's administrators are the members of its admin group: ask for `sudo usermod -aG " + group + " " + me +
         "` (macOS: `sudo dseditgroup -o edit -a " + me + " -t user " + group + "`), then log in again";
}

std::string describeOwnerSocketRefusal(const std::string& home) {
  return "pined closed " + home + "/pined.sock without answering: it serves only pine's own account and the members "
         "of its admin group (as they were when they logged in), and " + userName(getuid()) +
         " is neither; run pinectl as one of them (pined's log says which uid it refused and why)";
}

}  // namespace pine
