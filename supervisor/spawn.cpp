#include "supervisor/spawn.h"

#include "sandbox/linux/enter.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace pine {
namespace {

struct Prepared {
  std::vector<char*> argv;
  std::vector<char*> envp;
};

Prepared prepare(const SpawnSpec& spec) {
  Prepared p;
  for (auto& a : spec.args) p.argv.push_back(const_cast<char*>(a.c_str()));
  p.argv.push_back(nullptr);
  for (auto& e : spec.env) p.envp.push_back(const_cast<char*>(e.c_str()));
  p.envp.push_back(nullptr);
  return p;
}

void closeRange(unsigned first, unsigned last) noexcept {
  if (first > last) return;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, first, last, 0) == 0) return;
#endif
  for (unsigned fd = first; fd <= last && fd < 65536; ++fd) close((int)fd);
}

[[noreturn]] void failChild(int errPipe, int err) {
  ssize_t ignored = write(errPipe, &err, sizeof err);
  (void)ignored;
  _exit(127);
}

// Where the sandboxed child (or, with a pid namespace, the process that failed) reports.
void reportOnPipe(int err, const void* ctx) {
  ssize_t ignored = write(*static_cast<const int*>(ctx), &err, sizeof err);
  (void)ignored;
}

// The child between fork and exec: only async-signal-safe calls, and it never returns.
[[noreturn]] void execChild(const SpawnSpec& spec, const Prepared& p, int errPipe, pid_t parent) {
  auto fail = [errPipe](int err) { failChild(errPipe, err); };
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
  if (getppid() != parent) fail(ESRCH);  // the parent died before the signal was armed
  if (setsid() < 0) fail(errno);

  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) fail(errno);
  if (dup2(devnull, 0) < 0) fail(errno);
  if (spec.stdoutFd >= 0 && dup2(spec.stdoutFd, 1) < 0) fail(errno);
  if (spec.stderrFd >= 0 && dup2(spec.stderrFd, 2) < 0) fail(errno);
  if (spec.fd3 >= 0) {
    if (spec.fd3 == 3) {
      if (fcntl(3, F_SETFD, 0) < 0) fail(errno);
    } else if (dup2(spec.fd3, 3) < 0) {  // dup2 clears close-on-exec on the copy
      fail(errno);
    }
  } else {
    close(3);
  }
  // Everything else goes; errPipe (>= 10, close-on-exec) stays until exec succeeds.
  closeRange(4, (unsigned)errPipe - 1);
  closeRange((unsigned)errPipe + 1, ~0U);
  if (spec.sandbox) {
    // The last step before exec: from here on the process is confined for good.
    sandbox::ExecTarget target{spec.program.c_str(), p.argv.data(), p.envp.data(), reportOnPipe, &errPipe};
    sandbox::enterSandboxAndExec(*spec.sandbox, target);
  }
  execve(spec.program.c_str(), p.argv.data(), p.envp.data());
  failChild(errPipe, errno);
}

}  // namespace

pid_t spawnChild(const SpawnSpec& spec) {
  Prepared p = prepare(spec);
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + strerror(errno));
  // Keep the error pipe's write end above every fd the child rearranges.
  int errPipe = fcntl(pipefd[1], F_DUPFD_CLOEXEC, 10);
  close(pipefd[1]);
  if (errPipe < 0) {
    close(pipefd[0]);
    throw std::runtime_error(std::string("fcntl: ") + strerror(errno));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(pipefd[0]);
    close(errPipe);
    throw std::runtime_error(std::string("fork: ") + strerror(e));
  }
  if (pid == 0) execChild(spec, p, errPipe, parent);
  close(errPipe);
  int childErr = 0;
  ssize_t n;
  do n = read(pipefd[0], &childErr, sizeof childErr);
  while (n < 0 && errno == EINTR);
  close(pipefd[0]);
  if (n == (ssize_t)sizeof childErr) {
    // The child exits 127 at once; reap it here, as no one else knows its pid.
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw std::runtime_error("cannot start " + spec.program + (spec.sandbox ? " in its sandbox: " : ": ") +
                             strerror(childErr));
  }
  return pid;
}

}  // namespace pine
