#include "sandbox/linux/plan.h"

#include <unistd.h>

#include <map>
#include <mutex>
#include <tuple>

#include "sandbox/linux/seccomp_filter.h"

namespace pine::sandbox {
namespace {

std::string idMap(unsigned id) { return std::to_string(id) + " " + std::to_string(id) + " 1\n"; }

}  // namespace

LinuxPlan buildLinuxPlan(const Policy& policy, const LinuxOptions& o, const Probe& probe) {
  Requirements req;
  req.minLandlockAbi = o.minLandlockAbi;
  req.requireNamespaces = o.requireNamespaces && o.useNamespaces;
  if (auto why = refuseReason(probe, req)) throw PlanError(*why);
  if (o.requireNamespaces && !o.useNamespaces)
    throw PlanError("namespaces are required by configuration but switched off for this task");

  LinuxPlan plan;
  plan.lastCap = probe.lastCap;
  if (probe.root) {
    if (o.workerUid == 0 || o.workerGid == 0)
      throw PlanError("the worker uid/gid must not be 0: a worker never runs as root (set sandbox.uid/gid)");
    plan.changeIds = true;
    plan.uid = o.workerUid;
    plan.gid = o.workerGid;
  }
  bool nsOk = o.useNamespaces && (probe.root || probe.userNs);
  if (nsOk) {
    plan.newUserNs = !probe.root;
    plan.newMountNs = probe.mountNs;
    plan.newPidNs = probe.pidNs;
    plan.newIpcNs = probe.ipcNs;
    plan.newNetNs = probe.netNs && policy.network != Network::All;
    plan.mountProc = plan.newMountNs && plan.newPidNs && probe.procMount;
    if (plan.newUserNs) {
      plan.uidMap = idMap(getuid());
      plan.gidMap = idMap(getgid());
    }
  }
  Network net = policy.network;
  if (net == Network::Localhost && !plan.newNetNs) {
    net = Network::None;
    plan.notes.push_back("network localhost needs a network namespace, which is unavailable: enforced as none");
  }
  if (net == Network::Localhost) {
    plan.loopbackUp = true;
    plan.notes.push_back("network localhost is the sandbox's own loopback: services on the host's localhost are "
                         "not reachable");
  }
  if (!o.useNamespaces) plan.notes.push_back("namespaces switched off for this task");
  if (!plan.newMountNs) plan.notes.push_back("no mount namespace: guarded paths inside writable folders are kept "
                                             "read-only by Landlock alone, which also stops new files next to them");
  if (!plan.newPidNs) plan.notes.push_back("no pid namespace: the worker can list other processes in /proc");
  else if (!plan.mountProc) plan.notes.push_back("no fresh /proc: the worker can list other processes in /proc");
  if (!plan.newNetNs && net == Network::None)
    plan.notes.push_back("no network namespace: network none rests on seccomp (socket refused) and Landlock");

  std::vector<std::string> guarded, unguarded;
  std::vector<ns::Bind> binds =
      ns::computeBinds(policy, plan.changeIds ? plan.uid : (uid_t)-1, plan.changeIds ? plan.gid : (gid_t)-1, guarded,
                       unguarded);
  std::vector<std::string> hidden;
  if (plan.newMountNs) {
    plan.binds = std::move(binds);
    if (!o.maskDir.empty() && !o.maskFile.empty()) {
      auto masks = ns::computeMasks(policy, o.maskDir, o.maskFile, hidden);
      plan.binds.insert(plan.binds.end(), masks.begin(), masks.end());
    }
  } else {
    guarded.clear();  // Landlock carves them out instead
  }
  for (auto& u : unguarded)
    plan.notes.push_back("not guarded (does not exist, and a missing path cannot be bound read-only): " + u);

  plan.landlock.abi = probe.landlockAbi;
  plan.landlock.handledFs = landlock::handledFs(probe.landlockAbi);
  plan.landlock.handledNet =
      net == Network::None || policy.tcpPortsOnly ? landlock::handledNet(probe.landlockAbi) : 0;
  plan.landlock.portRules = landlock::computePortRules(policy, probe.landlockAbi);
  plan.landlock.scoped = landlock::scopes(probe.landlockAbi);
  plan.landlock.rules = landlock::computeRules(policy, probe.landlockAbi, guarded, hidden);
  if (probe.landlockAbi < 4 && net == Network::None)
    plan.notes.push_back("Landlock below ABI 4: TCP is refused by seccomp only");
  if (probe.landlockAbi < 4 && policy.tcpPortsOnly)
    plan.notes.push_back("Landlock below ABI 4: TCP is not limited to the policy's ports");
  if (probe.landlockAbi < 6)
    plan.notes.push_back("Landlock below ABI 6: signals and abstract sockets are scoped by the pid namespace and "
                         "seccomp only");

  try {
    // Compiling the filter is most of a plan's cost (about 2 ms): one per kind of filter is enough.
    seccomp::FilterOptions fo{net, policy.unixSockets && net == Network::All, policy.execOnly, policy.userNamespaces};
    static std::mutex cacheLock;
    static std::map<std::tuple<int, bool, bool, bool>, std::vector<sock_filter>> cache;
    std::lock_guard<std::mutex> lock(cacheLock);
    auto& cached = cache[{(int)fo.network, fo.unixSockets, fo.refuseExecveat, fo.userNamespaces}];
    if (cached.empty()) cached = seccomp::buildFilter(fo);
    plan.seccomp = cached;
  } catch (const std::exception& e) {
    throw PlanError(std::string(e.what()) + " (is libseccomp working? the task is refused rather than run "
                                            "without the filter)");
  }
  plan.cwd = o.cwd.empty() ? "/" : o.cwd;
  return plan;
}

}  // namespace pine::sandbox
