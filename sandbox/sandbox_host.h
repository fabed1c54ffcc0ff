// The sandbox backend as pined and `pinectl sandbox run` use it: what this machine's sandbox
// offers, and how a Policy becomes something spawnChild() can start. One implementation per
// platform, made by makeSandboxHost(): Linux's (sandbox/linux/linux_host.cpp: namespaces,
// Landlock, seccomp, uids of their own as root; it builds Seatbelt profiles too when tests
// select that backend) and macOS's (seatbelt/seatbelt_host_macos.cpp: written for macOS, not
// compiled on a Mac here). Shared code sees only this header, never sandbox/linux/.
#pragma once
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/backend.h"
#include "sandbox/policy.h"
#include "sandbox/sandbox_options.h"
#include "sandbox/seatbelt/sbpl_profile.h"

namespace pine::sandbox {

struct LinuxPlan;  // sandbox/linux/plan.h: built and carried out on Linux only

// A sandbox made ready for one program: its policy, and what the backend starts it with.
struct PreparedSandbox {
  Policy policy;
  std::shared_ptr<const LinuxPlan> linuxPlan;  // Linux: pine-launch enters it
  std::optional<SeatbeltProfile> seatbelt;     // Seatbelt: sandbox-exec applies it, in `cwd`
  std::optional<SandboxIds> runAs;             // the ids it runs as, when not pined's own
  std::vector<std::string> env;                // the program's whole environment
  std::string cwd;                             // a worker's workspace, the broker's data/, egress's /
  std::string mode;                            // "full" or "degraded": what the audit log says
  std::vector<std::string> notes;
};

// What a launch is built from besides the policy.
struct LaunchParams {
  std::string cwd;
  std::optional<SandboxIds> ids;  // as root: who it runs as (unset: SandboxOptions' workerUid/Gid)
  // Pine's home, whose sandbox/.mask and .mask-file a mount namespace binds over denied paths
  // inside readable trees; empty: none (Landlock carves those paths out instead).
  std::string maskHome;
  SeatbeltOptions seatbelt;
  std::string withoutMountNs;  // Linux: a note for the audit log when no mount namespace is made
};

// What undo() moved aside: git folders whose hooks and config it replaced (or a tree too large to
// look through whole), and instruction files made at a tree's top.
struct TaintUndo {
  std::vector<std::string> gitSettings;
  std::vector<std::string> instructionFiles;
  bool empty() const { return gitSettings.empty() && instructionFiles.empty(); }
};

// One run that read outside content: after it ends, what it created that git or a later run
// would obey is moved aside (sandbox/linux/tainted_trees.h).
class TaintedRun {
 public:
  virtual ~TaintedRun() = default;
  virtual TaintUndo undo(const std::string& stamp) const = 0;
};

// At start: what the log, the audit log and `pinectl check` say about this machine's sandbox.
struct HostFacts {
  std::string backend;                 // as the audit log names it
  std::string description;             // one line per fact
  std::optional<std::string> refused;  // why every task will be refused, with what to do
  bool degraded = false;
  int landlockAbi = 0;
  std::vector<std::string> notes;
};

class SandboxHost {
 public:
  virtual ~SandboxHost() = default;
  virtual Backend backend() const = 0;
  // pined runs as root: each child gets ids of its own.
  virtual bool root() const = 0;
  virtual HostFacts facts() const = 0;
  // Throws std::runtime_error saying why no sandbox can be built here: fail closed.
  virtual void requireUsable() const = 0;
  // As root: the agent's own ids (sandbox/linux/agent_ids.h). Otherwise SandboxOptions' worker ids.
  virtual SandboxIds agentIds(const std::string& home, const std::string& agent) const = 0;
  // As root: the agent's folders (`own`, relative to `home`) handed to `ids`, and its skills
  // (likewise) readable to them, without following links. Otherwise nothing.
  virtual void handOverAgentFolders(const std::string& home, const std::vector<std::string>& own,
                                    const std::vector<std::string>& skills, SandboxIds ids) const = 0;
  // A tainted run's missing instruction files (`names` in home/rel), made before it starts, so
  // that what keeps them read-only has files to hold; owned by `ids` as root.
  virtual void createMissingFiles(const std::string& home, const std::string& rel,
                                  const std::vector<std::string>& names, SandboxIds ids) const = 0;
  // Looks at a tainted run's writable trees before it starts (null: nothing to undo after it).
  virtual std::shared_ptr<const TaintedRun> watchTaintedRun(const std::vector<std::string>& writable,
                                                            std::optional<SandboxIds> runAs) const = 0;
  // Fills box's backend part (linuxPlan or seatbelt, runAs, mode, notes) from box.policy.
  // Throws, saying why, when it cannot be built.
  virtual void launch(PreparedSandbox& box, const LaunchParams& request) const = 0;
  // As root: what the broker (running as `ids`) needs of the home, again after pined wrote to it.
  virtual void shareHomeWithBroker(const std::string& home, SandboxIds ids) const = 0;
  // Whether the broker's sandbox reaches `path` as `ids` (empty: it does; else why not).
  virtual std::string untraversableReason(const std::string& path, SandboxIds ids) const = 0;
};

// This platform's host, probed now (Linux forks a child for the namespace probes). On macOS
// only Backend::Seatbelt exists; on Linux both do (Seatbelt against a stand-in, for tests).
std::shared_ptr<const SandboxHost> makeSandboxHost(Backend backend, const SandboxOptions& options = {});

// The Seatbelt part of a launch, the same for both platforms' hosts.
void seatbeltLaunch(PreparedSandbox& box, const LaunchParams& request);

}  // namespace pine::sandbox
