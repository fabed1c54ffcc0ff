#include "supervisor/kill_session.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>

namespace pine {

void killSession(pid_t sid) {
  for (int pass = 0; pass < 2; ++pass) {
    DIR* d = opendir("/proc");
    if (!d) return;
    while (dirent* e = readdir(d)) {
      char* end;
      long pid = strtol(e->d_name, &end, 10);
      if (*end != '\0' || pid <= 1 || pid == getpid()) continue;
      if (getsid((pid_t)pid) == sid) ::kill((pid_t)pid, SIGKILL);
    }
    closedir(d);
  }
}

}  // namespace pine
