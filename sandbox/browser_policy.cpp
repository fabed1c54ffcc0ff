// browserPolicy (policy.h): pine-browser's sandbox, the egress one widened by what Chromium's
// own sandbox needs. Kept apart from policy.cpp: it is one connector's.
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "sandbox/policy.h"
#include "sandbox/system_runtime.h"

namespace pine::sandbox {
namespace {

std::string resolvedIfThere(const char* p) {
  char buf[PATH_MAX];
  return realpath(p, buf) ? std::string(buf) : std::string();
}

void sortDistinct(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

Policy browserPolicy(const BrowserPaths& paths) {
  Policy pol = egressPolicy(paths.egress);
  if (paths.chromium.empty()) throw PolicyError("the browser policy needs the path of Chromium's program");
  const std::string chromium = canonicalPath(paths.chromium);
  pol.executable.push_back(chromium);
  if (std::string loader = elfInterpreter(chromium); !loader.empty()) pol.executable.push_back(loader);
  // Crashpad's handler, which Chromium starts whatever its flags say (it cannot ptrace here:
  // seccomp refuses that, so it writes no dump).
  const std::string crashpad = chromium.substr(0, chromium.rfind('/')) + "/chrome_crashpad_handler";
  if (access(crashpad.c_str(), X_OK) == 0) pol.executable.push_back(canonicalPath(crashpad));
  pol.userNamespaces = true;
  // Chromium's process singleton listens on a unix socket in the profile (and Mojo passes
  // descriptors on them). Landlock does not mediate connecting to a pathname socket: see
  // docs/mcp.md, "The bundled browser", for what that leaves open.
  pol.unixSockets = true;
  // That socket is made in a short folder pine-browser makes in /dev/shm (a socket's path has
  // at most 107 bytes): Landlock's right to make sockets there (and below).
  if (auto shm = resolvedIfThere("/dev/shm"); !shm.empty()) pol.listenSockets.push_back(shm + "/SingletonSocket");
  // Where the system's sockets live (D-Bus, container engines, users' session buses): each entry
  // there now is hidden, so that AF_UNIX reaches none of them. A mount namespace binds an empty
  // folder or file over each (the launch's maskHome); without one, Landlock has nothing to refuse
  // (connect is not mediated) and this stays a gap, as for entries made later.
  for (const char* hidden : browserHiddenRoots()) {
    const std::string root = resolvedIfThere(hidden);
    DIR* d = root.empty() ? nullptr : opendir(root.c_str());
    if (!d) continue;
    pol.readable.push_back(root);
    while (dirent* e = readdir(d)) {
      const std::string path = root + "/" + e->d_name;
      struct stat st;
      // A link (/run/shm) leads where the policy already decides.
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0 && lstat(path.c_str(), &st) == 0 &&
          !S_ISLNK(st.st_mode))
        pol.denyRead.push_back(path);
    }
    closedir(d);
  }
  for (const char* r : browserSystemReadable())
    if (auto real = resolvedIfThere(r); !real.empty()) pol.readable.push_back(real);
  for (const char* w : browserSystemWritable())
    if (auto real = resolvedIfThere(w); !real.empty()) pol.writable.push_back(real);
  const std::string home = paths.egress.pineHome.empty() ? "" : canonicalPath(paths.egress.pineHome);
  for (const std::string* own : {&paths.dataDir, &paths.screenshots}) {
    if (own->empty()) continue;
    const std::string c = canonicalPath(*own);
    if (!home.empty() && pathWithin(home, c))
      throw PolicyError(c + " holds pine's home (" + home + "): pine-browser may not write it");
    pol.writable.push_back(c);
  }
  sortDistinct(pol.readable);
  sortDistinct(pol.writable);
  sortDistinct(pol.executable);
  return pol;
}

}  // namespace pine::sandbox
