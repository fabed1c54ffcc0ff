#include "supervisor/backend_check.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "sandbox/policy.h"
#include "sandbox/seatbelt/sbpl_profile.h"
#include "supervisor/spawn.h"
#include "common/cloexec.h"

namespace pine {

void checkSeatbeltBackend(const sandbox::BackendChoice& choice) {
  const std::string& se = choice.sandboxExec;
  if (se.empty() || se[0] != '/') throw std::runtime_error("sandbox-exec must be an absolute path, not '" + se + "'");
  if (access(se.c_str(), X_OK) != 0)
    throw std::runtime_error("the Seatbelt backend needs " + se + ", which cannot be executed (" + strerror(errno) +
                             "); nothing is started unconfined");
  // The system runtime only: /usr/bin/true must start under it.
  auto profile = sandbox::buildSeatbeltProfile(sandbox::Policy{});
  int err[2];
  if (pipeCloexec(err) != 0) throw std::runtime_error(std::string("pipe: ") + strerror(errno));
  SpawnSpec spec;
  spec.program = "/usr/bin/true";
  spec.args = {spec.program};
  spec.seatbelt = &profile;
  spec.sandboxExec = se;
  spec.cwd = "/";
  spec.stdoutFd = err[1];
  spec.stderrFd = err[1];
  spec.label = "sandbox-exec check";
  pid_t pid;
  try {
    pid = spawnChild(spec);
  } catch (...) {
    close(err[0]);
    close(err[1]);
    throw;
  }
  close(err[1]);
  std::string said;
  char buf[512];
  ssize_t n;
  while ((n = read(err[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0 && said.size() < 2000) said.append(buf, (size_t)n);
  close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  std::string how = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                      : "signal " + std::to_string(WTERMSIG(status));
  throw std::runtime_error(se + " refused to start a program under pine's Seatbelt profile (" + how + ")" +
                           (said.empty() ? "" : ": " + said) + "; nothing is started unconfined");
}

}  // namespace pine
