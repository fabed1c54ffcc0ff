#include "sandbox/broker_sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace pine::sandbox {
namespace {

std::vector<std::string> workspacesIn(const std::string& home) {
  std::vector<std::string> out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir((home + "/agents").c_str()), closedir);
  if (!d) return out;
  while (dirent* e = readdir(d.get())) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string ws = home + "/agents/" + name + "/workspace";
    struct stat st;
    if (lstat(ws.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out.push_back(ws);
  }
  return out;
}

}  // namespace

PreparedSandbox prepareBrokerSandbox(const BrokerSandboxRequest& request, const SandboxHost& host, SandboxIds ids) {
  host.requireUsable();

  BrokerPaths paths;
  paths.pineHome = request.home;
  paths.program = request.program;
  paths.loader = elfInterpreter(request.program);
  paths.otherReadable = request.otherReadable;
  paths.watchedFolders = request.watchedFolders;
  paths.workspaces = workspacesIn(request.home);
  paths.listenPorts = request.listenPorts;
  paths.connectPorts = request.connectPorts;

  if (host.root()) {
    // Down to the home (which shareHomeWithBroker opens to the broker's group), its program and loader.
    for (const std::string& p : {request.home, request.program, paths.loader}) {
      if (p.empty()) continue;
      std::string why = host.untraversableReason(p, ids);
      if (!why.empty()) throw std::runtime_error("the broker (uid " + std::to_string(ids.uid) + ") cannot reach " +
                                                 p + ": " + why);
    }
    host.shareHomeWithBroker(request.home, ids);
  }
  PreparedSandbox out;
  out.policy = brokerPolicy(paths);
  out.env = brokerEnvironment(request.home);
  out.cwd = request.home + "/data";
  LaunchParams launch;
  launch.cwd = out.cwd;
  if (host.root()) launch.ids = ids;
  launch.maskHome = request.home;
  // Seatbelt: its own profile, no fork, exec of its program only, its sockets' paths (sbpl_profile.h);
  // it writes only data/, so git's files need no guard.
  launch.seatbelt.protectGitControl = false;
  launch.withoutMountNs = "no mount namespace for the broker: .env and the workspaces are carved out of pine's "
                          "home by Landlock, so a configuration file pined replaces stays unreadable to the "
                          "broker until it restarts";
  host.launch(out, launch);
  return out;
}

}  // namespace pine::sandbox
