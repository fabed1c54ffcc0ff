// macOS (written for it, not compiled on a Mac here): no /proc; libproc lists every pid.
#include "supervisor/kill_session.h"

#include <libproc.h>
#include <signal.h>
#include <unistd.h>

#include <vector>

namespace pine {

void killSession(pid_t sid) {
  for (int pass = 0; pass < 2; ++pass) {
    int n = proc_listallpids(nullptr, 0);
    if (n <= 0) return;
    std::vector<pid_t> pids((size_t)n + 64);
    n = proc_listallpids(pids.data(), (int)(pids.size() * sizeof(pid_t)));
    for (int i = 0; i < n; ++i) {
      pid_t pid = pids[(size_t)i];
      if (pid <= 1 || pid == getpid()) continue;
      if (getsid(pid) == sid) ::kill(pid, SIGKILL);
    }
  }
}

}  // namespace pine
