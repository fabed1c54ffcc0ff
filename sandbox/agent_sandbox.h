// Assembles one agent's sandbox from pine's home layout: the folders it owns,
// its policy (sandbox/policy.h) and the backend's launch (sandbox_host.h). pined
// uses it for every worker and `pinectl sandbox run` for the operator's look at
// the same policy, so the two can never differ. Platform-neutral: what differs
// (ids of its own as root, the Linux plan or the Seatbelt profile) is the host's.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "sandbox/policy.h"
#include "sandbox/sandbox_host.h"

namespace pine::sandbox {

struct AgentSandboxRequest {
  std::string agent;     // a valid agent id (the caller checked it)
  Grants grants;         // from configuration and the broker's approved grants: re-checked here
  bool tainted = false;  // instruction files and git settings become read-only
  bool untrusted = false;  // a run outside content started: no grants, no network, workspace read-only
  std::vector<std::string> skills;  // names of the skills for this agent: <home>/skills/<name>, read-only
};

class AgentSandboxes {
 public:
  // `programDir`: where the program the sandbox runs lives (read-only inside).
  AgentSandboxes(std::string pineHome, std::string programDir, std::shared_ptr<const SandboxHost> host);

  // Creates the agent's workspace, private home and temp folder if absent, hands
  // them to the worker uid when pine runs as root, and builds the launch (its cwd
  // the workspace). Throws std::runtime_error saying why and how to fix it: fail closed.
  // `openedFolder`: the folder the owner opened for this conversation, canonical and checked
  // (folder_rules.h); read-write, and never for an untrusted run.
  PreparedSandbox prepare(const AgentSandboxRequest& request, const std::string& openedFolder = "") const;

  const SandboxHost& host() const { return *host_; }
  AgentPaths pathsFor(const std::string& agent, const std::vector<std::string>& skills = {}) const;

 private:
  std::string home_, programDir_;
  std::shared_ptr<const SandboxHost> host_;
};

}  // namespace pine::sandbox
