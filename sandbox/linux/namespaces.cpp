#include "sandbox/linux/namespaces.h"

#include <fcntl.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace pine::sandbox::ns {
namespace {

bool existsNoFollow(const std::string& p, struct stat* st) { return lstat(p.c_str(), st) == 0; }

bool isGitDir(const std::string& p) {
  struct stat st;
  return lstat((p + "/HEAD").c_str(), &st) == 0 && (lstat((p + "/objects").c_str(), &st) == 0 ||
                                                     lstat((p + "/config").c_str(), &st) == 0);
}

std::string parentOf(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == 0 ? "/" : p.substr(0, slash);
}

std::string baseOf(const std::string& p) { return p.substr(p.rfind('/') + 1); }

// Flags a bind remount must keep: in a user namespace the kernel refuses to
// clear nosuid/nodev/noexec/atime flags that the outer mount has (they are locked).
unsigned long lockedFlags(const char* path) noexcept {
  struct statfs sf;
  if (statfs(path, &sf) != 0) return 0;
  unsigned long out = 0;
  if (sf.f_flags & ST_NOSUID) out |= MS_NOSUID;
  if (sf.f_flags & ST_NODEV) out |= MS_NODEV;
  if (sf.f_flags & ST_NOEXEC) out |= MS_NOEXEC;
  if (sf.f_flags & ST_NOATIME) out |= MS_NOATIME;
  if (sf.f_flags & ST_NODIRATIME) out |= MS_NODIRATIME;
  if (sf.f_flags & ST_RELATIME) out |= MS_RELATIME;
  return out;
}

}  // namespace

std::vector<Bind> computeBinds(const Policy& policy, uid_t owner, gid_t group, std::vector<std::string>& guarded,
                               std::vector<std::string>& unguarded) {
  std::vector<Bind> binds;
  for (auto& d : policy.denyWrite) {
    const std::string* root = nullptr;
    for (auto& w : policy.writable)
      if (pathWithin(d, w) && d != w && (!root || w.size() > root->size())) root = &w;
    if (!root) continue;  // not inside a writable tree: Landlock already keeps it read-only
    struct stat st;
    if (!existsNoFollow(d, &st)) {
      std::string parent = parentOf(d);
      if (baseOf(d) == "hooks" && isGitDir(parent) && mkdir(d.c_str(), 0755) == 0) {
        if (owner != (uid_t)-1 && lchown(d.c_str(), owner, group) != 0) {
          // Left root's: the guard still holds, untainted runs just cannot add hooks.
        }
      } else {
        // Inside a tree that is read-only as a whole (an untrusted run's workspace): nothing to say.
        bool covered = std::any_of(policy.denyWrite.begin(), policy.denyWrite.end(),
                                   [&](const std::string& e) { return e != d && pathWithin(d, e); });
        if (!covered) unguarded.push_back(d);
        continue;
      }
    }
    guarded.push_back(d);
    binds.push_back({d, true});
    for (std::string p = parentOf(d); p != *root && pathWithin(p, *root); p = parentOf(p)) binds.push_back({p, false});
  }
  // Parents first (a prefix sorts first), one entry per path, read-only wins.
  std::sort(binds.begin(), binds.end(), [](const Bind& a, const Bind& b) {
    return a.path != b.path ? a.path < b.path : a.readOnly > b.readOnly;
  });
  binds.erase(std::unique(binds.begin(), binds.end(), [](const Bind& a, const Bind& b) { return a.path == b.path; }),
              binds.end());
  // "/a/b" < "/a/b.c" < "/a/b/c" in byte order would bind b/c after b.c: harmless,
  // both are below b, which is bound before either.
  return binds;
}

std::vector<Bind> computeMasks(const Policy& policy, const std::string& maskDir, const std::string& maskFile,
                               std::vector<std::string>& hidden) {
  std::vector<Bind> binds;
  for (auto& d : policy.denyRead) {
    bool inside = false;
    for (auto* roots : {&policy.readable, &policy.writable})
      for (auto& r : *roots) inside |= pathWithin(d, r) && d != r;
    struct stat st;
    if (!inside || !existsNoFollow(d, &st)) continue;  // Landlock alone keeps what lies outside every root
    // A socket (pined.sock, for the broker) or fifo is hidden by the empty file too; a link or a
    // device is left to Landlock's carve-out.
    bool fileLike = S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode);
    if (!S_ISDIR(st.st_mode) && !fileLike) continue;
    hidden.push_back(d);
    binds.push_back({d, true, S_ISDIR(st.st_mode) ? maskDir : maskFile});
  }
  return binds;
}

int writeIdMaps(const char* uidMap, const char* gidMap) noexcept {
  auto writeFile = [](const char* path, const char* text) -> int {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    int e = errno;
    close(fd);
    return n == (ssize_t)len ? 0 : (n < 0 ? e : EIO);
  };
  if (int e = writeFile("/proc/self/setgroups", "deny")) return e;
  if (int e = writeFile("/proc/self/uid_map", uidMap)) return e;
  return writeFile("/proc/self/gid_map", gidMap);
}

int applyMounts(const std::vector<Bind>& binds, bool mountProc) noexcept {
  // The masks' sources are opened before anything is mounted: a mask over a folder that holds
  // them (pine's sandbox/, for the broker) must not hide them from the masks after it, and a
  // missing mask is an error, never a path left uncovered.
  struct Source {
    const std::string* path;
    int fd;
    char proc[40];  // /proc/self/fd/N: mount follows it to the opened file
  };
  Source sources[4];
  int count = 0;
  auto closeSources = [&]() {
    for (int i = 0; i < count; ++i) close(sources[i].fd);
  };
  for (const Bind& b : binds) {
    if (b.source.empty()) continue;
    bool known = false;
    for (int i = 0; i < count; ++i) known |= *sources[i].path == b.source;
    if (known) continue;
    if (count == 4) {
      closeSources();
      return E2BIG;
    }
    int fd = open(b.source.c_str(), O_PATH | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      int e = errno;
      closeSources();
      return e;
    }
    Source& src = sources[count++];
    src.path = &b.source;
    src.fd = fd;
    char digits[12];
    int n = 0;
    for (unsigned v = (unsigned)fd; n == 0 || v > 0; v /= 10) digits[n++] = (char)('0' + v % 10);
    memcpy(src.proc, "/proc/self/fd/", 14);
    for (int i = 0; i < n; ++i) src.proc[14 + i] = digits[n - 1 - i];
    src.proc[14 + n] = 0;
  }
  auto fail = [&](int e) {
    closeSources();
    return e;
  };
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return fail(errno);
  for (const Bind& b : binds) {
    const char* from = b.path.c_str();
    for (int i = 0; i < count && !b.source.empty(); ++i)
      if (*sources[i].path == b.source) from = sources[i].proc;
    if (mount(from, b.path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      if (errno == ENOENT) continue;  // removed since the plan: nothing left to guard or hide there
      return fail(errno);
    }
    if (b.readOnly) {
      unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | lockedFlags(b.path.c_str());
      if (mount(nullptr, b.path.c_str(), nullptr, flags, nullptr) != 0) return fail(errno);
    }
  }
  closeSources();
  if (mountProc && mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) return errno;
  return 0;
}

int loopbackUp() noexcept {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  memcpy(ifr.ifr_name, "lo", 3);
  int rc = ioctl(s, SIOCGIFFLAGS, &ifr);
  if (rc == 0) {
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    rc = ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  int e = errno;
  close(s);
  return rc == 0 ? 0 : e;
}

void ensureMasks(const std::string& dir, const std::string& file) {
  if (mkdir(dir.c_str(), 0) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create " + dir + ": " + strerror(errno));
  // O_EXCL: an existing mask has mode 000, which only root may open again.
  int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0);
  if (fd < 0 && errno != EEXIST) throw std::runtime_error("cannot create " + file + ": " + strerror(errno));
  if (fd >= 0) close(fd);
  struct stat d, f;
  if (lstat(dir.c_str(), &d) != 0 || !S_ISDIR(d.st_mode) || lstat(file.c_str(), &f) != 0 || !S_ISREG(f.st_mode) ||
      f.st_size != 0 || (d.st_mode & 07777) != 0 || (f.st_mode & 07777) != 0)
    throw std::runtime_error("the sandbox masks " + dir + " and " + file +
                             " must be an empty folder and an empty file, mode 000: remove them and retry");
}

}  // namespace pine::sandbox::ns
