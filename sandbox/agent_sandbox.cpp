#include "sandbox/agent_sandbox.h"

#include "common/names.h"

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

AgentSandboxes::AgentSandboxes(std::string pineHome, std::string programDir, std::shared_ptr<const SandboxHost> host)
    : home_(std::move(pineHome)), programDir_(std::move(programDir)), host_(std::move(host)) {}

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

PreparedSandbox AgentSandboxes::prepare(const AgentSandboxRequest& request, const std::string& openedFolder) const {
  host_->requireUsable();

  AgentPaths paths = pathsFor(request.agent, request.skills);
  if (!request.untrusted) paths.openedFolder = openedFolder;  // agentPolicy re-checks it as a grant
  makeDir(home_ + "/agents");
  makeDir(home_ + "/agents/" + request.agent);
  makeDir(paths.workspace);
  makeDir(home_ + "/sandbox");
  makeDir(paths.privateHome);
  makeDir(paths.tmpdir);
  SandboxIds ids = host_->agentIds(home_, request.agent);  // as root: the agent's own
  if (host_->root()) {
    // Folders from pine's home down are made traversable below; above it is the operator's to fix.
    requireTraversable(home_, ids.uid);
    requireTraversable(programDir_ + "/.", ids.uid);
    std::vector<std::string> skills;  // pined writes skills mode 600: the worker reads, never owns them
    for (auto& dir : paths.skills) skills.push_back(dir.substr(home_.size() + 1));
    host_->handOverAgentFolders(home_, {"agents/" + request.agent + "/workspace", "sandbox/" + request.agent,
                                        "sandbox/" + request.agent + "/tmp"}, skills, ids);
  }

  if (request.tainted && !request.untrusted) {
    // What keeps instruction files read-only needs files to hold: a tainted run must not be able
    // to create the ones that are missing (sandbox_host.h).
    const SandboxIds owner = host_->root() ? ids : SandboxIds{(uid_t)-1, (gid_t)-1};
    host_->createMissingFiles(home_, "agents/" + request.agent + "/workspace",
                              {"AGENTS.md", "SOUL.md", "MEMORY.md", "CLAUDE.md"}, owner);
    // Likewise the private home's settings, which later clean runs would read (policy.h).
    host_->createMissingFiles(home_, "sandbox/" + request.agent, homeConfigNames(), owner);
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
  out.cwd = paths.workspace;
  LaunchParams launch;
  launch.cwd = paths.workspace;
  launch.ids = ids;
  launch.maskHome = home_;
  // Seatbelt: a tainted or untrusted run's instruction files stay read-only by name, wherever they are.
  launch.seatbelt.protectInstructionFiles = request.tainted || request.untrusted;
  host_->launch(out, launch);
  return out;
}

}  // namespace pine::sandbox
