#include "sandbox/linux/enter.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>

#include "sandbox/linux/seccomp_filter.h"

namespace pine::sandbox {
namespace {

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};
using DirPtr = std::unique_ptr<DIR, DirCloser>;

// ---------- child side: async-signal-safe only ----------

constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH};

// The pid the monitor, and the one the init, forward signals to. Two variables and two handlers:
// the init shares the monitor's memory (clone with CLONE_VM), so one variable would be theirs together.
volatile pid_t gMonitorForwardTo = 0;
volatile pid_t gInitForwardTo = 0;

void monitorForward(int sig) {
  if (gMonitorForwardTo > 0) kill(gMonitorForwardTo, sig);
}
void initForward(int sig) {
  if (gInitForwardTo > 0) kill(gInitForwardTo, sig);
}

void blockForwarded(sigset_t* old) noexcept {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kForwarded) sigaddset(&set, s);
  sigprocmask(SIG_BLOCK, &set, old);
}

void startForwarding(void (*handler)(int)) noexcept {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int s : kForwarded) sigaction(s, &sa, nullptr);
  sigset_t set;
  sigemptyset(&set);
  for (int s : kForwarded) sigaddset(&set, s);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

void closeAllExcept(int keep) noexcept {
  auto closeRange = [](unsigned first, unsigned last) {
    if (first > last) return;
#ifdef SYS_close_range
    if (syscall(SYS_close_range, first, last, 0) == 0) return;
#endif
    for (unsigned fd = first; fd <= last && fd < 65536; ++fd) close((int)fd);
  };
  if (keep < 0) {
    closeRange(0, ~0U);
    return;
  }
  closeRange(0, (unsigned)keep - 1);
  closeRange((unsigned)keep + 1, ~0U);
}

// Ends this process the way the worker ended, so the supervisor's waitpid
// sees the worker's own status.
[[noreturn]] void exitLike(int status) noexcept {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);  // the worker dumped (or not); we never do
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    kill(getpid(), sig);
    _exit(128 + sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

// Outside the pid namespace: the supervisor's child. Waits for the
// namespace's init and ends with the worker's status. It shares its memory,
// errno included, with the init and (until exec) the worker, so it reads no
// errno: its own child cannot go missing, and a read is retried a bounded time.
[[noreturn]] void monitor(pid_t init, int statusRead) noexcept {
  closeAllExcept(statusRead);
  gMonitorForwardTo = init;
  startForwarding(monitorForward);
  int status = 0;
  while (waitpid(init, &status, 0) != init) {
  }
  int worker = 0;
  ssize_t n = -1;
  for (int tries = 0; tries < 1000 && n < 0; ++tries) n = read(statusRead, &worker, sizeof worker);
  exitLike(n == (ssize_t)sizeof worker ? worker : status);
}

// The init and the worker run on stacks made here (clone), which AddressSanitizer does not know:
// before each call that does not return it would print a warning on stderr, the program's own
// stderr, and a command's output would carry it (sanitizer builds only). Not instrumented.
#define PINE_ON_OWN_STACK __attribute__((no_sanitize("address")))

// pid 1 of the namespace: reaps orphans, forwards signals (an init only
// receives signals it has a handler for), and when the worker ends, reports its
// status and exits, which makes the kernel kill whatever is left inside.
[[noreturn]] PINE_ON_OWN_STACK void init(pid_t worker, int statusWrite) noexcept {
  closeAllExcept(statusWrite);
  gInitForwardTo = worker;
  startForwarding(initForward);
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid == worker) {
      ssize_t ignored = write(statusWrite, &status, sizeof status);
      (void)ignored;
      _exit(0);
    }
  }
}

int capsToZero() noexcept {
  __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &hdr, data) != 0) return errno;
  memset(data, 0xff, sizeof data);
  if (syscall(SYS_capget, &hdr, data) != 0) return errno;
  for (auto& d : data)
    if (d.effective || d.permitted || d.inheritable) return EPERM;
  return 0;
}

// Every capability goes, with no way back: the bounding set (so no exec can
// grant one), ambient, and securebits locked so that uid 0 (if it were ever
// regained) means nothing at exec.
int dropPrivileges(const LinuxPlan& plan) noexcept {
  bool privileged = plan.changeIds || plan.newUserNs;
  if (privileged) {
    unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED |
                         SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0) return errno;
    for (int cap = 0; cap <= plan.lastCap; ++cap)
      if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return errno;
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return errno;
  if (plan.changeIds) {
    if (syscall(SYS_setgroups, 0, nullptr) != 0) return errno;
    if (syscall(SYS_setresgid, plan.gid, plan.gid, plan.gid) != 0) return errno;
    if (syscall(SYS_setresuid, plan.uid, plan.uid, plan.uid) != 0) return errno;
    if (getuid() != plan.uid || geteuid() != plan.uid || getgid() != plan.gid) return EPERM;
  }
  return capsToZero();
}

// As root each program gets a uid of its own (an agent's, the broker's): a bound on that uid's
// processes, so that a loop starting processes (`while :; do sleep 9 & done`) stops there instead
// of taking the machine's every pid. Threads count too; browsers and builds stay far below it.
constexpr rlim_t kMaxProcesses = 4096;

int limitProcesses(const LinuxPlan& plan) noexcept {
  if (!plan.changeIds) return 0;  // an unprivileged pined's uid is the owner's: not ours to bound
  struct rlimit now;
  if (getrlimit(RLIMIT_NPROC, &now) != 0) return errno;
  if (now.rlim_max != RLIM_INFINITY && now.rlim_max <= kMaxProcesses && now.rlim_cur <= kMaxProcesses) return 0;
  struct rlimit lower = {std::min<rlim_t>(now.rlim_cur, kMaxProcesses), std::min<rlim_t>(now.rlim_max, kMaxProcesses)};
  return setrlimit(RLIMIT_NPROC, &lower) == 0 ? 0 : errno;
}

int armParentDeath(pid_t expectedParent) noexcept {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return errno;
  if (getppid() != expectedParent) return ESRCH;  // it died before the signal was armed
  return 0;
}

}  // namespace

namespace {

// What the processes made for a pid namespace are handed (it lives on the monitor's stack, which
// the monitor never leaves: its frame outlives them both, or their exec).
struct PidNsStart {
  const LinuxPlan* plan;
  const ExecTarget* target;
  int statusRead, statusWrite;
  sigset_t original;
  char* workerStack;
};

constexpr size_t kStackSize = 256 * 1024;

struct Failure {
  int stage;
  int err;
};

// The steps after the namespaces, then exec: in the one process that becomes the program.
Failure finishAndExec(const LinuxPlan& plan, const ExecTarget& target, pid_t parent) noexcept {
  if (plan.newMountNs) {
    if (int e = ns::applyMounts(plan.binds, plan.mountProc)) return {kStageMounts, e};
  }
  if (plan.loopbackUp) {
    if (int e = ns::loopbackUp()) return {kStageLoopback, e};
  }
  if (int e = dropPrivileges(plan)) return {kStageCredentials, e};
  if (int e = limitProcesses(plan)) return {kStageCredentials, e};
  // setresuid cleared the parent-death signal; arm it again for the last time.
  if (int e = armParentDeath(parent)) return {kStageParentDeath, e};
  if (chdir(plan.cwd.c_str()) != 0) return {kStageChdir, errno};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return {kStageNoNewPrivs, errno};
  if (plan.landlock.abi > 0) {
    if (int e = landlock::restrictSelf(plan.landlock)) return {kStageLandlock, e};
  }
  if (int e = seccomp::loadInChild(plan.seccomp)) return {kStageSeccomp, e};
  execve(target.path, target.argv, target.envp);
  return {kStageExec, errno};
}

[[noreturn]] void failWith(const ExecTarget& target, int stage, int err) noexcept {
  target.fail(stage, err, target.ctx);
  _exit(127);
}

[[noreturn]] void failWith(const ExecTarget& target, Failure f) noexcept { failWith(target, f.stage, f.err); }

// pid 2: the worker. Runs on its own stack in the init's memory until exec (the init waits, CLONE_VFORK).
PINE_ON_OWN_STACK int workerMain(void* arg) {
  auto& st = *static_cast<PidNsStart*>(arg);
  close(st.statusRead);
  close(st.statusWrite);
  sigprocmask(SIG_SETMASK, &st.original, nullptr);
  if (int e = armParentDeath(1)) failWith(*st.target, kStageParentDeath, e);
  failWith(*st.target, finishAndExec(*st.plan, *st.target, 1));
}

// pid 1: starts the worker, then reaps until it ends.
PINE_ON_OWN_STACK int initMain(void* arg) {
  auto& st = *static_cast<PidNsStart*>(arg);
  // Its parent (the monitor) is outside and has no pid here.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) failWith(*st.target, kStageParentDeath, errno);
  pollfd pfd = {st.statusWrite, POLLOUT, 0};
  if (poll(&pfd, 1, 0) < 0 || (pfd.revents & (POLLERR | POLLHUP)))
    failWith(*st.target, kStageParentDeath, ESRCH);  // monitor gone
  pid_t worker = clone(workerMain, st.workerStack + kStackSize, CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
  if (worker < 0) failWith(*st.target, kStagePidNamespace, errno);
  init(worker, st.statusWrite);
}

}  // namespace

const char* launchStageName(int stage) noexcept {
  switch (stage) {
    case kStagePlan: return "reading the launch plan";
    case kStageNamespaces: return "unshare (namespaces)";
    case kStageIdMaps: return "writing the user namespace's id maps";
    case kStageParentDeath: return "the parent-death signal (the starting process is gone)";
    case kStagePidNamespace: return "starting the pid namespace's init and worker";
    case kStageMounts: return "mounts (read-only binds, masks, /proc)";
    case kStageLoopback: return "bringing up loopback";
    case kStageCredentials: return "dropping groups, ids and capabilities";
    case kStageChdir: return "chdir";
    case kStageNoNewPrivs: return "no_new_privs";
    case kStageLandlock: return "landlock_restrict_self";
    case kStageSeccomp: return "loading the seccomp filter";
    case kStageExec: return "execve";
  }
  return "starting the sandbox";
}

void enterSandboxAndExec(const LinuxPlan& plan, const ExecTarget& target) noexcept {
  const pid_t parent = getppid();
  int flags = 0;
  if (plan.newUserNs) flags |= CLONE_NEWUSER;
  if (plan.newMountNs) flags |= CLONE_NEWNS;
  if (plan.newNetNs) flags |= CLONE_NEWNET;
  if (plan.newPidNs) flags |= CLONE_NEWPID;
  if (plan.newIpcNs) flags |= CLONE_NEWIPC;
  // /proc/self/{uid,gid}_map belong to root while a process is not dumpable
  // (a pined that dropped from root is not); exec would make it dumpable anyway.
  if (plan.newUserNs && prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) failWith(target, kStageNamespaces, errno);
  if (flags && unshare(flags) != 0) failWith(target, kStageNamespaces, errno);
  if (plan.newUserNs) {
    if (int e = ns::writeIdMaps(plan.uidMap.c_str(), plan.gidMap.c_str())) failWith(target, kStageIdMaps, e);
  }
  // A credential change (the user namespace) clears the parent-death signal.
  if (int e = armParentDeath(parent)) failWith(target, kStageParentDeath, e);
  if (!plan.newPidNs) failWith(target, finishAndExec(plan, target, parent));

  // The init and the worker share this process's memory (CLONE_VM) instead of copying the
  // supervisor's page tables twice: that copying was most of a sandboxed start's extra cost.
  PidNsStart st;
  st.plan = &plan;
  st.target = &target;
  blockForwarded(&st.original);
  int status[2];
  if (pipe2(status, O_CLOEXEC) != 0) failWith(target, kStagePidNamespace, errno);
  st.statusRead = status[0];
  st.statusWrite = status[1];
  void* stacks = mmap(nullptr, 2 * kStackSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stacks == MAP_FAILED) failWith(target, kStagePidNamespace, errno);
  char* initStack = static_cast<char*>(stacks);
  st.workerStack = initStack + kStackSize;
  pid_t initPid = clone(initMain, initStack + kStackSize, CLONE_VM | SIGCHLD, &st);
  if (initPid < 0) failWith(target, kStagePidNamespace, errno);
  monitor(initPid, status[0]);
}

}  // namespace pine::sandbox
