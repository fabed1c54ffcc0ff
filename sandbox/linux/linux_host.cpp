#include "sandbox/linux/linux_host.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "sandbox/linux/agent_ids.h"
#include "sandbox/linux/broker_home.h"
#include "sandbox/linux/namespaces.h"
#include "sandbox/linux/owned_tree.h"
#include "sandbox/linux/tainted_trees.h"

namespace pine::sandbox {
namespace {

class TaintedTrees final : public TaintedRun {
 public:
  TaintedTrees(const std::vector<std::string>& roots, unsigned uid, unsigned gid) : trees_(roots, uid, gid) {}
  TaintUndo undo(const std::string& stamp) const override { return trees_.undo(stamp); }

 private:
  TaintedRunTrees trees_;
};

class LinuxHost final : public SandboxHost {
 public:
  LinuxHost(Probe probe, LinuxOptions options, Backend backend)
      : probe_(std::move(probe)), options_(std::move(options)), backend_(backend) {}

  Backend backend() const override { return backend_; }
  bool root() const override { return probe_.root; }

  HostFacts facts() const override {
    HostFacts f;
    f.backend = "linux";  // the kernel's facts, whichever backend starts the programs
    f.description = describe(probe_);
    f.refused = refuseReason(probe_, requirements());
    f.degraded = probe_.degraded();
    f.landlockAbi = probe_.landlockAbi;
    f.notes = probe_.notes;
    return f;
  }

  void requireUsable() const override {
    if (backend_ != Backend::Linux) return;
    if (auto why = refuseReason(probe_, requirements())) throw std::runtime_error(*why);
  }

  SandboxIds agentIds(const std::string& home, const std::string& agent) const override {
    if (!probe_.root) return {options_.workerUid, options_.workerGid};
    return pickAgentIds(home, agent, options_.workerIdFirst, options_.workerIdLast);
  }

  void handOverAgentFolders(const std::string& home, const std::vector<std::string>& own,
                            const std::vector<std::string>& skills, SandboxIds ids) const override {
    if (!probe_.root) return;
    // Descriptor-based, and only where a folder is new or not the worker's yet (owned_tree.h).
    handOverToWorker(home, own, ids.uid, ids.gid);
    shareReadOnlyBelow(home, skills);
  }

  void createMissingFiles(const std::string& home, const std::string& rel, const std::vector<std::string>& names,
                          SandboxIds ids) const override {
    // The binds that keep instruction files read-only need files to bind (tainted_trees.h).
    sandbox::createMissingFiles(home, rel, names, ids.uid, ids.gid);
  }

  std::shared_ptr<const TaintedRun> watchTaintedRun(const std::vector<std::string>& writable,
                                                    std::optional<SandboxIds> runAs) const override {
    return std::make_shared<const TaintedTrees>(writable, runAs ? runAs->uid : (unsigned)-1,
                                                runAs ? runAs->gid : (unsigned)-1);
  }

  void launch(PreparedSandbox& box, const LaunchParams& request) const override {
    if (backend_ == Backend::Seatbelt) return seatbeltLaunch(box, request);
    LinuxOptions opts = options_;
    SandboxIds ids = request.ids.value_or(SandboxIds{options_.workerUid, options_.workerGid});
    opts.workerUid = ids.uid;
    opts.workerGid = ids.gid;
    opts.cwd = request.cwd;
    opts.maskDir.clear();
    opts.maskFile.clear();
    if (!request.maskHome.empty()) {
      opts.maskDir = request.maskHome + "/sandbox/.mask";
      opts.maskFile = request.maskHome + "/sandbox/.mask-file";
      if (mkdir((request.maskHome + "/sandbox").c_str(), 0700) != 0 && errno != EEXIST)
        throw std::runtime_error("cannot create " + request.maskHome + "/sandbox: " + strerror(errno));
      ns::ensureMasks(opts.maskDir, opts.maskFile);
    }
    auto plan = std::make_shared<LinuxPlan>(buildLinuxPlan(box.policy, opts, probe_));
    if (!plan->newMountNs && !request.withoutMountNs.empty()) plan->notes.push_back(request.withoutMountNs);
    if (plan->changeIds) box.runAs = SandboxIds{plan->uid, plan->gid};
    box.mode = probe_.degraded() ? "degraded" : "full";
    box.notes = plan->notes;
    box.linuxPlan = std::move(plan);
  }

  void shareHomeWithBroker(const std::string& home, SandboxIds ids) const override { prepareBrokerHome(home, ids); }

  std::string untraversableReason(const std::string& path, SandboxIds ids) const override {
    return sandbox::untraversableReason(path, ids.uid, ids.gid);
  }

 private:
  Requirements requirements() const {
    Requirements req;
    req.minLandlockAbi = options_.minLandlockAbi;
    req.requireNamespaces = options_.requireNamespaces;
    return req;
  }

  Probe probe_;
  LinuxOptions options_;
  Backend backend_;
};

}  // namespace

std::shared_ptr<const SandboxHost> makeLinuxHost(Probe probe, LinuxOptions options, Backend backend) {
  return std::make_shared<const LinuxHost>(std::move(probe), std::move(options), backend);
}

std::shared_ptr<const SandboxHost> makeSandboxHost(Backend backend, const SandboxOptions& options) {
  LinuxOptions linuxOptions;
  static_cast<SandboxOptions&>(linuxOptions) = options;
  return makeLinuxHost(probeKernel(), std::move(linuxOptions), backend);
}

}  // namespace pine::sandbox
