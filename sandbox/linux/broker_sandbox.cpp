#include "sandbox/linux/broker_sandbox.h"

#include "sandbox/linux/namespaces.h"

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

PreparedBroker prepareBrokerSandbox(const BrokerSandboxRequest& request, const Probe& probe,
                                    const LinuxOptions& options, SandboxIds ids, Backend backend) {
  if (backend == Backend::Linux) {
    Requirements req;
    req.minLandlockAbi = options.minLandlockAbi;
    req.requireNamespaces = options.requireNamespaces;
    if (auto why = refuseReason(probe, req)) throw std::runtime_error(*why);
  }

  BrokerPaths paths;
  paths.pineHome = request.home;
  paths.program = request.program;
  paths.loader = elfInterpreter(request.program);
  paths.otherReadable = request.otherReadable;
  paths.workspaces = workspacesIn(request.home);
  paths.listenPorts = request.listenPorts;
  paths.connectPorts = request.connectPorts;

  LinuxOptions opts = options;
  if (probe.root) {
    // Down to the home (which prepareBrokerHome opens to the broker's group), its program and loader.
    for (const std::string& p : {request.home, request.program, paths.loader}) {
      if (p.empty()) continue;
      std::string why = untraversableReason(p, ids.uid, ids.gid);
      if (!why.empty()) throw std::runtime_error("the broker (uid " + std::to_string(ids.uid) + ") cannot reach " +
                                                 p + ": " + why);
    }
    prepareBrokerHome(request.home, ids);
    opts.workerUid = ids.uid;
    opts.workerGid = ids.gid;
  }
  PreparedBroker out;
  out.policy = brokerPolicy(paths);
  out.env = brokerEnvironment(request.home);
  if (backend == Backend::Seatbelt) {
    // Its own profile: no fork, exec of its program only, its sockets' paths (sbpl_profile.h).
    SeatbeltOptions so;
    so.protectGitControl = false;  // it writes only data/
    out.seatbelt = buildSeatbeltProfile(out.policy, so);
    out.mode = "full";  // as far as pine can tell: sandbox-exec applies it
    return out;
  }
  opts.cwd = request.home + "/data";
  opts.maskDir = request.home + "/sandbox/.mask";
  opts.maskFile = request.home + "/sandbox/.mask-file";
  if (mkdir((request.home + "/sandbox").c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create " + request.home + "/sandbox: " + strerror(errno));
  ns::ensureMasks(opts.maskDir, opts.maskFile);
  out.plan = buildLinuxPlan(out.policy, opts, probe);
  if (!out.plan.newMountNs)
    out.plan.notes.push_back("no mount namespace for the broker: .env and the workspaces are carved out of pine's "
                             "home by Landlock, so a configuration file pined replaces stays unreadable to the "
                             "broker until it restarts");
  out.mode = probe.degraded() ? "degraded" : "full";
  out.notes = out.plan.notes;
  return out;
}

}  // namespace pine::sandbox
