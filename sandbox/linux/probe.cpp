#include "sandbox/linux/probe.h"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "sandbox/linux/landlock.h"
#include "sandbox/linux/namespaces.h"

namespace pine::sandbox {
namespace {

enum Item { kUser, kMount, kNet, kPid, kIpc, kProc, kItems };
const char* kItemName[kItems] = {"user", "mount", "network", "pid", "ipc", "fresh /proc"};

struct NsResult {
  int err[kItems];  // 0: works; else the errno that stopped it (-1: not tried)
};

// In a throwaway child: try each namespace the way enterSandboxAndExec will.
// Everything it needs is prepared before fork: the child allocates nothing.
struct NsInputs {
  std::string uidMap, gidMap;
  std::vector<ns::Bind> binds = {{"/etc", true}};
};

[[noreturn]] void tryNamespaces(int out, bool root, const NsInputs& in) {
  NsResult r;
  for (int& e : r.err) e = -1;
  auto report = [&]() {
    ssize_t ignored = write(out, &r, sizeof r);
    (void)ignored;
    _exit(0);
  };
  if (!root) {
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);  // as enterSandboxAndExec does
    r.err[kUser] = unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
    if (r.err[kUser] == 0) r.err[kUser] = ns::writeIdMaps(in.uidMap.c_str(), in.gidMap.c_str());
    if (r.err[kUser] != 0) report();
  }
  r.err[kMount] = unshare(CLONE_NEWNS) == 0 ? 0 : errno;
  if (r.err[kMount] == 0) r.err[kMount] = ns::applyMounts(in.binds, false);
  r.err[kNet] = unshare(CLONE_NEWNET) == 0 ? 0 : errno;
  r.err[kIpc] = unshare(CLONE_NEWIPC) == 0 ? 0 : errno;
  r.err[kPid] = unshare(CLONE_NEWPID) == 0 ? 0 : errno;
  if (r.err[kPid] == 0) {
    pid_t pid = fork();
    if (pid < 0) {
      r.err[kPid] = errno;
    } else if (pid == 0) {
      int e = r.err[kMount] != 0 ? r.err[kMount]
                                 : (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0
                                        ? 0
                                        : errno);
      _exit(e == 0 ? 0 : (e & 0x7f) + 1);
    } else {
      int st = 0;
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      r.err[kProc] = WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : (WIFEXITED(st) ? WEXITSTATUS(st) - 1 : EIO);
    }
  }
  report();
  _exit(0);
}

}  // namespace

Probe probeKernel() {
  Probe p;
  p.root = geteuid() == 0;
  p.landlockAbi = landlock::kernelAbi();
  if (p.landlockAbi == 0)
    p.notes.push_back(std::string("Landlock unavailable: ") + strerror(errno));
  uint32_t action = SECCOMP_RET_ERRNO;
  p.seccomp = syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
  if (!p.seccomp) p.notes.push_back(std::string("seccomp filters unavailable: ") + strerror(errno));
  {
    std::ifstream f("/proc/sys/kernel/cap_last_cap");
    int v = 0;
    if (f >> v && v > 0 && v < 64) p.lastCap = v;
  }

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    p.notes.push_back(std::string("cannot probe namespaces: pipe: ") + strerror(errno));
    return p;
  }
  NsInputs in;
  in.uidMap = std::to_string(getuid()) + " " + std::to_string(getuid()) + " 1\n";
  in.gidMap = std::to_string(getgid()) + " " + std::to_string(getgid()) + " 1\n";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    tryNamespaces(fds[1], p.root, in);
  }
  close(fds[1]);
  NsResult r;
  bool got = false;
  if (pid > 0) {
    ssize_t n;
    do n = read(fds[0], &r, sizeof r);
    while (n < 0 && errno == EINTR);
    got = n == (ssize_t)sizeof r;
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  close(fds[0]);
  if (!got) {
    p.notes.push_back("cannot probe namespaces: the probe child failed");
    return p;
  }
  p.userNs = r.err[kUser] == 0;
  p.mountNs = r.err[kMount] == 0;
  p.netNs = r.err[kNet] == 0;
  p.pidNs = r.err[kPid] == 0;
  p.ipcNs = r.err[kIpc] == 0;
  p.procMount = r.err[kProc] == 0;
  for (int i = 0; i < kItems; ++i) {
    if (i == kUser && p.root) continue;  // root needs none
    if (r.err[i] > 0)
      p.notes.push_back(std::string("no ") + kItemName[i] + " namespace: " + strerror(r.err[i]));
    else if (r.err[i] < 0)
      p.notes.push_back(std::string("no ") + kItemName[i] + " namespace: not tried (an earlier step failed)");
  }
  return p;
}

std::string describe(const Probe& p) {
  auto yn = [](bool b) { return b ? "yes" : "no"; };
  std::string s = "linux sandbox: landlock ";
  s += p.landlockAbi ? "ABI " + std::to_string(p.landlockAbi) : std::string("unavailable");
  s += std::string("; seccomp ") + yn(p.seccomp);
  s += std::string("; namespaces: ") + (p.root ? "" : std::string("user ") + yn(p.userNs) + ", ") + "mount " +
       yn(p.mountNs) + ", network " + yn(p.netNs) + ", pid " + yn(p.pidNs) + " (fresh /proc " + yn(p.procMount) +
       "), ipc " + yn(p.ipcNs);
  s += p.root ? "; pined runs as root: workers drop to an unprivileged uid" : "; workers keep pined's uid";
  s += p.degraded() ? "\nmode: DEGRADED (Landlock and seccomp only where namespaces are missing)" : "\nmode: full";
  for (auto& n : p.notes) s += "\n  " + n;
  return s;
}

std::optional<std::string> refuseReason(const Probe& p, const Requirements& r) {
  if (!r.sandbox) return std::nullopt;
  if (p.landlockAbi == 0)
    return "the sandbox is on but Landlock is unavailable on this kernel, so the task is refused. Use Linux 5.13 or "
           "later with CONFIG_SECURITY_LANDLOCK=y and \"landlock\" in the lsm= boot parameter (see "
           "/sys/kernel/security/lsm), or turn this agent's sandbox off knowingly (\"sandbox\": false).";
  if (p.landlockAbi < r.minLandlockAbi)
    return "the kernel's Landlock ABI is " + std::to_string(p.landlockAbi) + ", below the configured minimum " +
           std::to_string(r.minLandlockAbi) +
           " (sandbox.minLandlockAbi), so the task is refused. Upgrade the kernel or lower the minimum.";
  if (!p.seccomp)
    return "the sandbox is on but seccomp filters are unavailable (kernel without CONFIG_SECCOMP_FILTER), so the "
           "task is refused: without them socket(), ptrace and io_uring stay open. Use a kernel with seccomp.";
  if (r.requireNamespaces && p.degraded()) {
    std::string why;
    for (auto& n : p.notes) why += (why.empty() ? "" : "; ") + n;
    return "namespaces are required (sandbox.requireNamespaces) but the backend is degraded (" + why +
           "), so the task is refused. Run pined as root, or allow unprivileged user namespaces "
           "(user.max_user_namespaces > 0; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), or set "
           "sandbox.requireNamespaces to false.";
  }
  return std::nullopt;
}

}  // namespace pine::sandbox
