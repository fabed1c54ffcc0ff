// spawnChild() on Linux (spawn.h): clone(CLONE_VM | CLONE_VFORK), and pine-launch for a
// Linux plan. macOS has its own, spawn_posix.cpp; supervisor/meson.build picks one.
#include "supervisor/spawn.h"

#include "common/sanitizer_env.h"
#include "common/unix_socket.h"
#include "sandbox/linux/enter.h"
#include "sandbox/linux/launch_plan.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace pine {
namespace {

struct Strings {
  std::vector<std::string> own;
  std::vector<char*> ptrs;
  char* const* get() {
    ptrs.clear();
    for (auto& s : own) ptrs.push_back(const_cast<char*>(s.c_str()));
    ptrs.push_back(nullptr);
    return ptrs.data();
  }
};

void closeRange(unsigned first, unsigned last) noexcept {
  if (first > last) return;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, first, last, 0) == 0) return;
#endif
  for (unsigned fd = first; fd <= last && fd < 65536; ++fd) close((int)fd);
}

// What the cloned child is handed; it lives on the parent's stack, which the parent does not
// leave while the child runs (CLONE_VFORK).
struct Child {
  const SpawnSpec* spec;
  const char* path;
  char* const* argv;
  char* const* envp;
  int errPipe;  // >= 10, close-on-exec
  int planFd;   // >= 10, close-on-exec; -1 without a sandbox
  pid_t parent;
};

// The exec of pine-launch itself failed (not the program's, which the launcher reports).
constexpr int kStageLauncher = -1;

[[noreturn]] void failChild(int fd, int err, int stage = sandbox::kStageExec) noexcept {
  sandbox::LaunchReport r{stage, err};
  ssize_t ignored = write(fd, &r, sizeof r);
  (void)ignored;
  _exit(127);
}

// The child between clone and exec. It shares pined's memory (CLONE_VM, CLONE_VFORK: pined waits),
// so it only makes system calls: no allocation, no lock, nothing of pined's state changes.
int childMain(void* arg) {
  const Child& c = *static_cast<const Child*>(arg);
  const SpawnSpec& spec = *c.spec;
  int report = c.errPipe;
  // pined's handlers must never run here: defaults first, then unblock (pined blocked everything).
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) failChild(report, errno);
  if (getppid() != c.parent) failChild(report, ESRCH);  // the parent died before the signal was armed
  if (setsid() < 0) failChild(report, errno);

  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) failChild(report, errno);
  if (dup2(spec.stdinFd >= 0 ? spec.stdinFd : devnull, 0) < 0) failChild(report, errno);
  if (spec.stdoutFd >= 0 && dup2(spec.stdoutFd, 1) < 0) failChild(report, errno);
  if (spec.stderrFd >= 0 && dup2(spec.stderrFd, 2) < 0) failChild(report, errno);
  if (spec.fd3 >= 0) {
    if (spec.fd3 == 3) {
      if (fcntl(3, F_SETFD, 0) < 0) failChild(report, errno);
    } else if (dup2(spec.fd3, 3) < 0) {  // dup2 clears close-on-exec on the copy
      failChild(report, errno);
    }
  } else {
    close(3);
  }
  if (c.planFd >= 0) {
    // pine-launch finds its plan on fd 4 and reports on fd 5 (sandbox/linux/launch_plan.h).
    if (dup2(c.planFd, sandbox::kLaunchPlanFd) < 0) failChild(report, errno);
    if (dup2(c.errPipe, sandbox::kLaunchReportFd) < 0) failChild(report, errno);
    report = sandbox::kLaunchReportFd;
    closeRange(sandbox::kLaunchReportFd + 1, ~0U);
  } else {
    // Everything else goes; errPipe (close-on-exec) stays until exec succeeds.
    closeRange(4, (unsigned)c.errPipe - 1);
    closeRange((unsigned)c.errPipe + 1, ~0U);
  }
  // Without pine-launch (which takes the plan's), the working directory is set here.
  if (c.planFd < 0 && !spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) failChild(report, errno);
  execve(c.path, c.argv, c.envp);
  failChild(report, errno, c.planFd >= 0 ? kStageLauncher : sandbox::kStageExec);
}

// A descriptor at 10 or above, close-on-exec, so that arranging 0 to 5 never overwrites it.
int high(int fd) {
  int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  int e = errno;
  close(fd);
  if (h < 0) throw std::runtime_error(std::string("fcntl: ") + strerror(e));
  return h;
}

}  // namespace

std::string defaultLauncher() { return programDir() + "/pine-launch"; }

pid_t spawnChild(const SpawnSpec& spec) {
  Strings argv, envp;
  std::string path;
  int planFd = -1;
  if (spec.sandbox) {
    path = spec.launcher.empty() ? defaultLauncher() : spec.launcher;
    argv.own = {path};
    if (!spec.label.empty()) argv.own.push_back(spec.label);
    // The launcher's own environment: the sanitizer's settings in a sanitizer build, nothing else.
    envp.own = sanitizerEnvironment(false);
    planFd = sandbox::writeLaunchPlan(*spec.sandbox, {spec.program, spec.args, spec.env});
  } else if (spec.seatbelt) {
    argv.own = seatbeltArgv(spec);
    path = spec.sandboxExec;
    envp.own = spec.env;
  } else {
    path = spec.program;
    argv.own = spec.args;
    envp.own = spec.env;
  }
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    int e = errno;
    if (planFd >= 0) close(planFd);
    throw std::runtime_error(std::string("pipe2: ") + strerror(e));
  }
  int errPipe;
  try {
    errPipe = high(pipefd[1]);
  } catch (...) {
    close(pipefd[0]);
    if (planFd >= 0) close(planFd);
    throw;
  }
  constexpr size_t kStack = 256 * 1024;
  void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) {
    int e = errno;
    close(pipefd[0]);
    close(errPipe);
    if (planFd >= 0) close(planFd);
    throw std::runtime_error(std::string("mmap: ") + strerror(e));
  }
  Child child{&spec, path.c_str(), argv.get(), envp.get(), errPipe, planFd, getpid()};
  // Blocked until the child has set its signals to their defaults: none of pined's handlers may
  // run in a child that shares its memory.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = clone(childMain, static_cast<char*>(stack) + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &child);
  int cloneErr = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  munmap(stack, kStack);
  close(errPipe);
  if (planFd >= 0) close(planFd);
  if (pid < 0) {
    close(pipefd[0]);
    throw std::runtime_error(std::string("clone: ") + strerror(cloneErr));
  }
  // The child has exec'd (pine-launch or the program) or exited. pine-launch holds the pipe until
  // the program's exec succeeds or it reports the step that failed.
  sandbox::LaunchReport report{};
  ssize_t n;
  do n = read(pipefd[0], &report, sizeof report);
  while (n < 0 && errno == EINTR);
  close(pipefd[0]);
  if (n == (ssize_t)sizeof report) {
    // The child exits 127 at once; reap it here, as no one else knows its pid.
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (report.stage == kStageLauncher)
      throw std::runtime_error("cannot start " + spec.program + ": its launcher " + path +
                               " does not run: " + strerror(report.err) + " (pine-launch is installed beside pined)");
    if (spec.sandbox)
      throw std::runtime_error("cannot start " + spec.program + " in its sandbox: " +
                               sandbox::describeLaunchReport(report));
    if (spec.seatbelt)
      throw std::runtime_error("cannot start " + spec.program + " in its sandbox: " + path + ": " +
                               strerror(report.err) + " (the Seatbelt backend needs sandbox-exec; nothing runs unconfined)");
    throw std::runtime_error("cannot start " + spec.program + ": " + strerror(report.err));
  }
  return pid;
}

}  // namespace pine
