#include "sandbox/linux/broker_home.h"

#include <kj/io.h>

#include "sandbox/linux/owned_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace pine::sandbox {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error("preparing pine's home for the broker: " + what + " " + path + ": " + strerror(errno));
}


// A folder opened without following a link at its last component.
int openDir(int at, const char* name) { return openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); }

// The broker's group and g+r (files) or g+rx (folders) on one entry of the open folder `dirFd`,
// and with `recursive` on everything below it; links, mounts and files with several links are
// left alone (owned_tree.h).
void shareEntry(int dirFd, const char* name, gid_t gid, const std::string& path, bool recursive) {
  applyToEntry(dirFd, name, TreeRule{(uid_t)-1, gid, S_IRGRP, S_IRGRP | S_IXGRP}, path, recursive);
}

}  // namespace

bool uidInUse(uid_t uid) {
  DIR* d = opendir("/proc");
  if (!d) return true;  // cannot tell: assume it is
  std::unique_ptr<DIR, int (*)(DIR*)> closer(d, closedir);
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream status(std::string("/proc/") + e->d_name + "/status");
    std::string line;
    bool zombie = false, uses = false;
    while (std::getline(status, line)) {
      if (line.rfind("State:", 0) == 0) zombie = line.find('Z') != std::string::npos;
      if (line.rfind("Uid:", 0) == 0) {
        std::istringstream ids(line.substr(4));
        unsigned long id;
        while (ids >> id) uses |= id == uid;
      }
    }
    if (uses && !zombie) return true;
  }
  return false;
}

SandboxIds pickBrokerIds(uid_t first, uid_t last, const std::string& dataDir) {
  if (first == 0 || last < first)
    throw std::runtime_error("the broker's id range " + std::to_string(first) + "-" + std::to_string(last) +
                             " is empty or starts at 0 (pined --broker-ids FIRST-LAST)");
  auto usable = [](uid_t id) { return !getpwuid(id) && !getgrgid((gid_t)id) && !uidInUse(id); };
  struct stat st;
  if (lstat(dataDir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid >= first && st.st_uid <= last &&
      usable(st.st_uid))
    return {st.st_uid, (gid_t)st.st_uid};
  for (uid_t id = first; id <= last && id >= first; ++id)
    if (usable(id)) return {id, (gid_t)id};
  throw std::runtime_error("every id from " + std::to_string(first) + " to " + std::to_string(last) +
                           " is taken by an account, a group or a process; the broker needs one of its own: "
                           "give pined another range with --broker-ids FIRST-LAST");
}

std::string untraversableReason(const std::string& path, uid_t uid, gid_t gid) {
  std::string dir = path;
  while (dir != "/" && !dir.empty()) {
    dir = dir.substr(0, dir.find_last_of('/'));
    if (dir.empty()) dir = "/";
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) continue;
    bool passable = (st.st_mode & S_IXOTH) || (st.st_uid == uid && (st.st_mode & S_IXUSR)) ||
                    (st.st_gid == gid && (st.st_mode & S_IXGRP));
    if (!passable)
      return dir + " is not traversable by uid " + std::to_string(uid) + ": run `chmod o+x " + dir +
             "` (or keep pine's home elsewhere)";
  }
  return "";
}

void prepareBrokerHome(const std::string& home, SandboxIds ids) {
  kj::AutoCloseFd root(open(home.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (root.get() < 0) fail("open", home);
  struct stat hs;
  if (fstat(root.get(), &hs) != 0) fail("stat", home);
  // The home: its group (the broker's own) may walk through it and read what is shared below,
  // never write in it: pined listens on pine.sock, so the broker makes nothing here. (Homes an
  // earlier pined made group-writable and sticky for the broker's socket lose the write bit.)
  if (hs.st_gid != ids.gid && fchown(root.get(), (uid_t)-1, ids.gid) != 0) fail("chgrp", home);
  mode_t want = ((hs.st_mode & 07777) | S_IXGRP) & ~(mode_t)S_IWGRP;
  if ((hs.st_mode & 07777) != want && fchmod(root.get(), want) != 0) fail("chmod", home);

  // data/: the broker's.
  if (mkdirat(root.get(), "data", 0700) != 0 && errno != EEXIST) fail("mkdir", home + "/data");
  kj::AutoCloseFd data(openDir(root.get(), "data"));
  if (data.get() < 0) fail("open", home + "/data");
  if (mkdirat(data.get(), "tmp", 0700) != 0 && errno != EEXIST) fail("mkdir", home + "/data/tmp");
  struct stat ds;
  if (fstat(data.get(), &ds) != 0) fail("stat", home + "/data");
  if (ds.st_uid != ids.uid && fchown(data.get(), ids.uid, (gid_t)-1) != 0) fail("chown", home + "/data");
  applyToTree(data.get(), TreeRule{ids.uid, (gid_t)-1, 0, 0}, home + "/data");

  // What it reads.
  for (const char* name : {"pine.yaml", "pine.json", "models.yaml", "models.json", "USER.md"})
    shareEntry(root.get(), name, ids.gid, home + "/" + name, false);
  for (const char* name : {"skills", "providers"})
    shareEntry(root.get(), name, ids.gid, home + "/" + name, true);
  shareEntry(root.get(), "agents", ids.gid, home + "/agents", false);
  kj::AutoCloseFd agents(openDir(root.get(), "agents"));
  if (agents.get() < 0) {
    if (errno == ENOENT) return;
    fail("open", home + "/agents");
  }
  int dupFd = dup(agents.get());
  if (dupFd < 0) fail("dup", home + "/agents");
  DIR* d = fdopendir(dupFd);
  if (!d) {
    close(dupFd);
    fail("opendir", home + "/agents");
  }
  std::unique_ptr<DIR, int (*)(DIR*)> closer(d, closedir);
  while (dirent* e = readdir(d)) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    std::string dir = home + "/agents/" + e->d_name;
    struct stat st;
    if (fstatat(agents.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    shareEntry(agents.get(), e->d_name, ids.gid, dir, false);
    kj::AutoCloseFd agent(openDir(agents.get(), e->d_name));
    if (agent.get() < 0) fail("open", dir);
    for (const char* name : {"agent.yaml", "agent.json", "AGENTS.md"})
      shareEntry(agent.get(), name, ids.gid, dir + "/" + name, false);
  }
}

}  // namespace pine::sandbox
