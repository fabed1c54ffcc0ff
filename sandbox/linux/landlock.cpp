#include "sandbox/linux/landlock.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>


// Syscall numbers are the same on every architecture (added after the table was unified).
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

namespace pine::sandbox::landlock {
namespace {

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

// The kernel's structures at their largest known size; the size passed to the
// kernel says how much of it the running ABI reads.
struct RulesetAttr {
  uint64_t handledAccessFs;
  uint64_t handledAccessNet;  // ABI 4
  uint64_t scoped;            // ABI 6
};
struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowedAccess;
  int32_t parentFd;
};
struct NetPortAttr {
  uint64_t allowedAccess;
  uint64_t port;
};
constexpr unsigned kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;
constexpr int kRuleNetPort = 2;  // ABI 4

struct Entry {
  bool exists = false;
  bool dir = false;
  bool link = false;
};

Entry entryOf(const std::string& p) {
  struct stat st;
  Entry e;
  if (lstat(p.c_str(), &st) != 0) return e;
  e.exists = true;
  e.dir = S_ISDIR(st.st_mode);
  e.link = S_ISLNK(st.st_mode);
  return e;
}

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

// The next component below `from` on the way to `to` (to lies strictly beneath from).
std::string nextOnPath(const std::string& from, const std::string& to) {
  size_t start = from == "/" ? 1 : from.size() + 1;
  size_t end = to.find('/', start);
  return to.substr(0, end == std::string::npos ? to.size() : end);
}

uint64_t maskFor(uint64_t access, const Entry& e, uint64_t handled) {
  access &= handled;
  if (!e.dir) access &= kFileRights;
  return access;
}

}  // namespace

uint64_t handledFs(int abi) {
  if (abi <= 0) return 0;
  uint64_t all = kExecute | kWriteFile | kReadFile | kReadDir | kRemoveDir | kRemoveFile | kMakeChar | kMakeDir |
                 kMakeReg | kMakeSock | kMakeFifo | kMakeBlock | kMakeSym;
  if (abi >= 2) all |= kRefer;
  if (abi >= 3) all |= kTruncate;
  if (abi >= 5) all |= kIoctlDev;
  return all;
}

uint64_t handledNet(int abi) { return abi >= 4 ? (kNetBindTcp | kNetConnectTcp) : 0; }

uint64_t scopes(int abi) { return abi >= 6 ? (kScopeAbstractUnix | kScopeSignal) : 0; }

int kernelAbi() noexcept {
  long v = syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return v < 0 ? 0 : (int)v;
}

std::vector<Rule> computeRules(const Policy& policy, int abi, const std::vector<std::string>& denyWriteSkip,
                               const std::vector<std::string>& denyReadSkip) {
  const uint64_t handled = handledFs(abi);
  std::map<std::string, uint64_t> allow;  // path -> rights, before type masking
  const uint64_t read = policy.execOnly ? (kRead & ~kExecute) : kRead;
  for (auto& r : policy.readable) allow[r] |= read;
  for (auto& w : policy.writable) allow[w] |= read | kWrite;
  // Executing opens the file for reading too: a program that may run must be readable.
  for (auto& e : policy.executable) allow[e] |= kExecute | kReadFile;
  // A socket is made in its folder: Landlock's right is the folder's (and every folder below it).
  for (auto& sock : policy.listenSockets) {
    size_t slash = sock.rfind('/');
    if (slash != std::string::npos) allow[slash == 0 ? "/" : sock.substr(0, slash)] |= kMakeSock;
  }

  std::vector<Rule> rules;
  for (auto& [path, access] : allow) {
    Entry e = entryOf(path);
    if (!e.exists || e.link) continue;  // nothing to open; a canonical path is never a link
    rules.push_back({path, maskFor(access, e, handled)});
  }

  struct Deny {
    std::string path;
    uint64_t removed;
  };
  std::vector<Deny> denies;
  for (auto& d : policy.denyRead)
    if (std::find(denyReadSkip.begin(), denyReadSkip.end(), d) == denyReadSkip.end()) denies.push_back({d, handled});
  for (auto& d : policy.denyWrite)
    if (std::find(denyWriteSkip.begin(), denyWriteSkip.end(), d) == denyWriteSkip.end())
      denies.push_back({d, handled & ~kRead});

  for (auto& deny : denies) {
    Entry de = entryOf(deny.path);
    if (!de.exists || de.link) continue;  // what does not exist cannot be opened; see README for denyWrite
    const uint64_t removed = de.dir ? deny.removed : (deny.removed & kFileRights);
    std::vector<Rule> next;
    for (auto& rule : rules) {
      if (pathWithin(rule.path, deny.path)) {
        // An allow at or below a deny: deny wins.
        Rule r{rule.path, rule.access & ~deny.removed};
        if (r.access) next.push_back(r);
        continue;
      }
      if (!pathWithin(deny.path, rule.path) || !(rule.access & removed)) {
        next.push_back(rule);
        continue;
      }
      // Narrow the tree's own rule, then give every sibling on the way down its full rights back.
      // The folders on the way keep no right to change their entries either:
      // otherwise the denied path could be renamed away, or replaced by
      // renaming a sibling over it.
      // kMakeSock stays, even for a denied folder below: a new socket can neither move the denied
      // path, nor take its name (that needs kRemoveFile too), nor read anything, and the broker
      // makes its control socket in pine's home.
      const uint64_t entryRights = kRemoveDir | kRemoveFile | kMakeChar | kMakeDir | kMakeReg | kMakeFifo |
                                   kMakeBlock | kMakeSym | kRefer;
      if (uint64_t narrowed = rule.access & ~((removed & ~kMakeSock) | entryRights)) next.push_back({rule.path, narrowed});
      std::string dir = rule.path;
      while (dir != deny.path) {
        std::string step = nextOnPath(dir, deny.path);
        DirPtr d(opendir(dir.c_str()));
        if (d) {
          while (dirent* ent = readdir(d.get())) {
            std::string name = ent->d_name;
            if (name == "." || name == "..") continue;
            std::string child = join(dir, name);
            if (child == step) continue;
            Entry ce = entryOf(child);
            if (!ce.exists || ce.link) continue;  // a link is checked at its target
            if (uint64_t a = maskFor(rule.access, ce, handled)) next.push_back({child, a});
          }
        }
        dir = step;
      }
    }
    rules.swap(next);
  }
  return rules;
}

std::vector<PortRule> computePortRules(const Policy& policy, int abi) {
  std::vector<PortRule> out;
  if (!policy.tcpPortsOnly || abi < 4) return out;
  std::map<int, uint64_t> ports;
  for (int p : policy.tcpBind) ports[p] |= kNetBindTcp;
  for (int p : policy.tcpConnect) ports[p] |= kNetConnectTcp;
  for (auto& [port, access] : ports) out.push_back({(uint64_t)port, access});
  return out;
}

int restrictSelf(const ChildPlan& plan) noexcept {
  RulesetAttr attr{plan.handledFs, plan.handledNet, plan.scoped};
  size_t size = plan.abi >= 6 ? 24 : plan.abi >= 4 ? 16 : 8;
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (rs < 0) return errno;
  for (const Rule& r : plan.rules) {
    int fd = open(r.path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      // Gone since the plan was made, or out of this uid's reach (a folder of another user's, as
      // root's broker meets in an agent's workspace): nothing to allow. Skipping grants less; a
      // failure here would stop the whole process from starting over one path it cannot use.
      if (errno == ENOENT || errno == ENOTDIR || errno == EACCES) continue;
      int e = errno;
      close(rs);
      return e;
    }
    PathBeneathAttr pb{r.access, fd};
    long rc = syscall(SYS_landlock_add_rule, rs, kRulePathBeneath, &pb, 0);
    int e = errno;
    close(fd);
    if (rc != 0) {
      close(rs);
      return e;
    }
  }
  for (const PortRule& r : plan.portRules) {
    NetPortAttr np{r.access, r.port};
    if (syscall(SYS_landlock_add_rule, rs, kRuleNetPort, &np, 0) != 0) {
      int e = errno;
      close(rs);
      return e;
    }
  }
  long rc = syscall(SYS_landlock_restrict_self, rs, 0);
  int e = errno;
  close(rs);
  return rc == 0 ? 0 : e;
}

}  // namespace pine::sandbox::landlock
