// Assembles one agent's sandbox from pine's home layout: the folders it owns,
// its policy (sandbox/policy.h) and the backend's plan. pined uses it for every
// worker and `pinectl sandbox run` for the operator's look at the same policy,
// so the two can never differ.
#pragma once
#include <string>
#include <vector>

#include <optional>

#include "sandbox/backend.h"
#include "sandbox/linux/enter.h"
#include "sandbox/linux/probe.h"
#include "sandbox/policy.h"
#include "sandbox/seatbelt/sbpl_profile.h"

namespace pine::sandbox {

struct AgentSandboxRequest {
  std::string agent;     // a valid agent id (the caller checked it)
  Grants grants;         // from configuration and the broker's approved grants: re-checked here
  bool tainted = false;  // instruction files and git settings become read-only
  bool untrusted = false;  // a run outside content started: no grants, no network, workspace read-only
  std::vector<std::string> skills;  // names of the skills for this agent: <home>/skills/<name>, read-only
};

struct PreparedSandbox {
  Policy policy;
  LinuxPlan plan;                          // the Linux backend's
  std::optional<SeatbeltProfile> seatbelt;  // the Seatbelt backend's, instead of the plan
  std::vector<std::string> env;  // the worker's whole environment
  std::string workspace;
  std::string mode;              // "full" or "degraded": what the audit log says
  std::vector<std::string> notes;
};

class AgentSandboxes {
 public:
  // `programDir`: where the program the sandbox runs lives (read-only inside).
  AgentSandboxes(std::string pineHome, std::string programDir, Probe probe, LinuxOptions options = {},
                 Backend backend = Backend::Linux);

  // Creates the agent's workspace, private home and temp folder if absent, hands
  // them to the worker uid when pine runs as root, and builds the plan. Throws
  // std::runtime_error saying why and how to fix it: fail closed.
  PreparedSandbox prepare(const AgentSandboxRequest& request) const;

  const Probe& probe() const { return probe_; }
  AgentPaths pathsFor(const std::string& agent, const std::vector<std::string>& skills = {}) const;

 private:
  std::string home_, programDir_;
  Probe probe_;
  LinuxOptions options_;
  Backend backend_;
};

}  // namespace pine::sandbox
