#include "sandbox/agent_sandbox.h"

#include "common/names.h"
#include "sandbox/linux/agent_ids.h"
#include "sandbox/linux/namespaces.h"
#include "sandbox/linux/owned_tree.h"
#include "sandbox/linux/tainted_trees.h"

#include <pwd.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace pine::sandbox {
namespace {

void makeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create " + path + ": " + strerror(errno));
}

std::string ownerHome() {
  if (struct passwd* pw = getpwuid(getuid())) return pw->pw_dir;
  const char* h = getenv("HOME");
  return h ? h : "";
}

// A worker that runs under another uid must be able to walk to its folders.
void requireTraversable(const std::string& path, uid_t uid) {
  if (uid == getuid()) return;
  std::string dir = path;
  while (!dir.empty() && dir != "/") {
    dir = dir.substr(0, dir.find_last_of('/'));
    if (dir.empty()) dir = "/";
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) continue;
    bool passable = (st.st_mode & S_IXOTH) || (st.st_uid == uid && (st.st_mode & S_IXUSR));
    if (!passable)
      throw std::runtime_error("the worker (uid " + std::to_string(uid) + ") cannot reach " + path + ": " + dir +
                               " is not traversable by others; run `chmod o+x " + dir +
                               "` or keep pine's home elsewhere");
    if (dir == "/") break;
  }
}

}  // namespace

AgentSandboxes::AgentSandboxes(std::string pineHome, std::string programDir, Probe probe, LinuxOptions options,
                               Backend backend)
    : home_(std::move(pineHome)), programDir_(std::move(programDir)), probe_(std::move(probe)),
      options_(std::move(options)), backend_(backend) {}

AgentPaths AgentSandboxes::pathsFor(const std::string& agent, const std::vector<std::string>& skills) const {
  AgentPaths p;
  p.agentId = agent;
  p.pineHome = home_;
  p.userHome = ownerHome();
  p.workspace = home_ + "/agents/" + agent + "/workspace";
  p.privateHome = home_ + "/sandbox/" + agent;
  p.tmpdir = home_ + "/sandbox/" + agent + "/tmp";
  // Its own skills and the shared ones, read-only: the agent reads a skill when a task calls
  // for it, and never writes one (add_skill goes through pined).
  for (const auto& name : skills) {
    if (!isValidAgentId(name)) continue;  // skill names follow the agent-id rule; anything else is not a folder of ours
    std::string dir = home_ + "/skills/" + name;
    if (access(dir.c_str(), F_OK) == 0) p.skills.push_back(dir);
  }
  p.programDir = programDir_;
  if (agent == "main") p.userMd = home_ + "/USER.md";
  return p;
}

PreparedSandbox AgentSandboxes::prepare(const AgentSandboxRequest& request) const {
  if (backend_ == Backend::Linux) {
    Requirements req;
    req.minLandlockAbi = options_.minLandlockAbi;
    req.requireNamespaces = options_.requireNamespaces;
    if (auto why = refuseReason(probe_, req)) throw std::runtime_error(*why);
  }

  AgentPaths paths = pathsFor(request.agent, request.skills);
  SandboxIds ids{options_.workerUid, options_.workerGid};  // as root: the agent's own, below
  makeDir(home_ + "/agents");
  makeDir(home_ + "/agents/" + request.agent);
  makeDir(paths.workspace);
  makeDir(home_ + "/sandbox");
  makeDir(paths.privateHome);
  makeDir(paths.tmpdir);
  if (probe_.root) {
    // Folders from pine's home down are made traversable below; above it is the operator's to fix.
    ids = pickAgentIds(home_, request.agent, options_.workerIdFirst, options_.workerIdLast);
    requireTraversable(home_, ids.uid);
    requireTraversable(programDir_ + "/.", ids.uid);
    // Descriptor-based, and only where a folder is new or not the worker's yet (owned_tree.h).
    handOverToWorker(home_, {"agents/" + request.agent + "/workspace", "sandbox/" + request.agent,
                             "sandbox/" + request.agent + "/tmp"}, ids.uid, ids.gid);
    std::vector<std::string> skills;  // pined writes skills mode 600: the worker reads, never owns them
    for (auto& dir : paths.skills) skills.push_back(dir.substr(home_.size() + 1));
    shareReadOnlyBelow(home_, skills);
  }

  if (request.tainted && !request.untrusted) {
    // The binds that keep instruction files read-only need files to bind: a tainted run must
    // not be able to create the ones that are missing (tainted_trees.h).
    const unsigned uid = probe_.root ? ids.uid : (unsigned)-1, gid = probe_.root ? ids.gid : (unsigned)-1;
    createMissingFiles(home_, "agents/" + request.agent + "/workspace", {"AGENTS.md", "SOUL.md", "MEMORY.md", "CLAUDE.md"},
                       uid, gid);
    // Likewise the private home's settings, which later clean runs would read (policy.h).
    createMissingFiles(home_, "sandbox/" + request.agent, homeConfigNames(), uid, gid);
  }

  PreparedSandbox out;
  out.policy = agentPolicy(paths, request.untrusted ? Grants{} : request.grants, request.tainted || request.untrusted);
  if (request.untrusted) {
    // A run outside content started may only read: its workspace and private home are read-only
    // (deny wins), so even a subverted worker cannot plant anything for the owner's later runs.
    out.policy.network = Network::None;
    out.policy.denyWrite.push_back(out.policy.writable.at(0));  // the workspace
    out.policy.denyWrite.push_back(out.policy.writable.at(1));  // the private home
  }
  out.env = workerEnvironment(paths);
  out.workspace = paths.workspace;
  if (backend_ == Backend::Seatbelt) {
    // sandbox-exec applies it (spawn.h); a tainted or untrusted run's instruction files stay
    // read-only by name, wherever they are.
    SeatbeltOptions so;
    so.protectInstructionFiles = request.tainted || request.untrusted;
    out.seatbelt = buildSeatbeltProfile(out.policy, so);
    out.mode = "full";  // as far as pine can tell: sandbox-exec applies it
    return out;
  }
  LinuxOptions opts = options_;
  opts.workerUid = ids.uid;
  opts.workerGid = ids.gid;
  opts.cwd = paths.workspace;
  opts.maskDir = home_ + "/sandbox/.mask";
  opts.maskFile = home_ + "/sandbox/.mask-file";
  ns::ensureMasks(opts.maskDir, opts.maskFile);
  out.plan = buildLinuxPlan(out.policy, opts, probe_);
  out.mode = probe_.degraded() ? "degraded" : "full";
  out.notes = out.plan.notes;
  return out;
}

}  // namespace pine::sandbox
