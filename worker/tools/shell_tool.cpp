// bash: the guard first, then /bin/bash -c in the workspace with a minimal
// environment, its own process group and a time limit. The OS sandbox the
// worker runs in is the boundary; the guard only refuses the obvious early.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "sandbox/guard/bash_guard.h"
#include "sandbox/shell_env.h"
#include "worker/tools/tool_parts.h"
#include "common/cloexec.h"
#include "common/fd.h"

namespace pine::tools::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kTermGrace = std::chrono::seconds(2);   // after SIGTERM, before SIGKILL
constexpr auto kDrainAfterExit = std::chrono::milliseconds(500);

// Head and tail of a stream, with a count of what fell out between them.
class CappedOutput {
 public:
  explicit CappedOutput(size_t cap) : headCap_(cap / 2), tailCap_(cap - cap / 2) {}
  void add(const char* p, size_t n) {
    total_ += n;
    size_t h = std::min(n, headCap_ - head_.size());
    head_.append(p, h);
    p += h, n -= h;
    if (n == 0) return;
    tail_.append(p, n);
    if (tail_.size() > 2 * tailCap_ + 4096) tail_.erase(0, tail_.size() - tailCap_);
  }
  std::string text() {
    if (tail_.size() > tailCap_) tail_.erase(0, tail_.size() - tailCap_);
    const size_t cut = total_ - head_.size() - tail_.size();
    if (cut == 0) return stripTerminalControls(head_ + tail_);
    // Cut on character boundaries so no half character turns into U+FFFD.
    std::string head = head_;
    size_t k = head.size(), cont = 0;
    while (k > 0 && cont < 3 && (static_cast<unsigned char>(head[k - 1]) & 0xC0) == 0x80) --k, ++cont;
    if (k > 0) {
      const unsigned char lead = static_cast<unsigned char>(head[k - 1]);
      const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
      if (need > cont + 1) head.resize(k - 1);
    }
    size_t start = 0;
    while (start < tail_.size() && start < 3 && (static_cast<unsigned char>(tail_[start]) & 0xC0) == 0x80) ++start;
    const size_t dropped = cut + (head_.size() - head.size()) + start;
    return stripTerminalControls(head) + "\n[... " + std::to_string(dropped) +
           " bytes of output cut from the middle ...]\n" + stripTerminalControls(std::string_view(tail_).substr(start));
  }

 private:
  size_t headCap_, tailCap_, total_ = 0;
  std::string head_, tail_;
};

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// In the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void execShell(int devNull, int out, int cwd, char* const argv[], char* const envp[]) {
  setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s = 1; s < NSIG; ++s)
    if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);  // ignored signals would survive exec
  if (dup2(devNull, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) _exit(126);
  if (fchdir(cwd) != 0) {
    static const char msg[] = "pine: cannot enter the workspace\n";
    (void)!::write(2, msg, sizeof msg - 1);
    _exit(126);
  }
  closeFrom(3);  // nothing else the worker holds reaches the command
  execve("/bin/bash", argv, envp);
  static const char msg[] = "pine: cannot start /bin/bash\n";
  (void)!::write(2, msg, sizeof msg - 1);
  _exit(127);
}

// Has the child exited? Leaves it unreaped, so its pid keeps naming the
// process group we still have to signal.
bool exited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

}  // namespace

ToolResult bashTool(const ToolEnv& env, const Json& args) {
  const std::string command = args["command"];
  if (command.find_first_not_of(" \t\n") == std::string::npos) return fail("bash: the command is empty");
  const auto verdict = guard::checkBashCommand(command);
  if (!verdict.allowed) return fail(withAskHint("bash: refused by the command guard, nothing was run: " + verdict.reason));

  const long long limit = std::max(1, env.shellTimeoutSec);
  const long long timeoutSec = std::min(intArg(args, "timeout_sec", limit), limit);

  std::vector<std::string> envStrings = sandbox::shellEnvironment(env.home, env.tmpdir);
  std::vector<char*> envp;
  for (auto& s : envStrings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string arg0 = "bash", arg1 = "-c", arg2 = command;
  char* argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};

  Fd devNull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  Fd cwd(::open(env.workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (devNull.get() < 0 || cwd.get() < 0)
    return fail("bash: could not prepare the command (" + std::string(std::strerror(errno)) + ")");
  int p[2];
  if (pipeCloexec(p) != 0) return fail("bash: could not create a pipe: " + std::string(std::strerror(errno)));
  Fd readEnd(p[0]), writeEnd(p[1]);

  const pid_t pid = fork();
  if (pid < 0) return fail("bash: could not start a process: " + std::string(std::strerror(errno)));
  if (pid == 0) execShell(devNull.get(), writeEnd.get(), cwd.get(), argv, envp.data());
  setpgid(pid, pid);  // also here, so the group exists before any kill below
  writeEnd.reset();

  CappedOutput output(env.outputCap);
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(timeoutSec);
  bool timedOut = false, killed = false, pipeOpen = true;
  Clock::time_point killAt{}, drainUntil{};
  bool childDone = false;
  char buf[16384];
  while (true) {
    const auto now = Clock::now();
    if (!childDone && exited(pid)) {
      childDone = true;
      // What it left running in its group goes with it (and lets go of the pipe).
      kill(-pid, SIGKILL);
      drainUntil = now + kDrainAfterExit;
    }
    if (childDone && (!pipeOpen || now >= drainUntil)) break;
    if (!childDone && !timedOut && now >= deadline) {
      timedOut = true;
      kill(-pid, SIGTERM);
      killAt = now + kTermGrace;
    }
    if (timedOut && !killed && !childDone && now >= killAt) {
      killed = true;
      kill(-pid, SIGKILL);
    }
    if (!pipeOpen) {
      usleep(20 * 1000);
      continue;
    }
    pollfd pfd{readEnd.get(), POLLIN, 0};
    int r = poll(&pfd, 1, 50);  // short ticks: the child's exit is checked between them
    if (r < 0 && errno != EINTR) break;
    if (r > 0) {
      ssize_t n = ::read(readEnd.get(), buf, sizeof buf);
      if (n > 0) output.add(buf, size_t(n));
      else if (n == 0 || (errno != EINTR && errno != EAGAIN)) pipeOpen = false;
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string text = output.text();
  if (text.empty()) text = "(no output)";
  if (text.back() != '\n') text += '\n';
  bool isError = true;
  if (timedOut) {
    text += "[timed out after " + std::to_string(timeoutSec) + " s: the command was stopped with SIGTERM" +
            (killed ? ", then SIGKILL" : "") + "; give it a larger timeout_sec (at most " + std::to_string(limit) +
            ") or make it faster]";
  } else if (WIFSIGNALED(status)) {
    text += "[killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")]";
  } else {
    const int code = WEXITSTATUS(status);
    isError = code != 0;
    text += "[exit code " + std::to_string(code) + "]";
  }
  return {std::move(text), isError};
}

}  // namespace pine::tools::detail
