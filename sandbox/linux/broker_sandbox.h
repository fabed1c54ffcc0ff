// Assembles the broker's sandbox from pine's home (the broker's counterpart of
// sandbox/agent_sandbox.h): its policy (sandbox/policy.h brokerPolicy), what it
// needs of the home when pined runs as root (broker_home.h), and the plan.
#pragma once
#include <string>
#include <vector>

#include <optional>

#include "sandbox/backend.h"
#include "sandbox/linux/broker_home.h"
#include "sandbox/linux/plan.h"
#include "sandbox/seatbelt/sbpl_profile.h"

namespace pine::sandbox {

struct BrokerSandboxRequest {
  std::string home;                        // pine's home
  std::string program;                     // the broker program pined runs
  std::vector<int> listenPorts;            // the control API's TCP port
  std::vector<int> connectPorts;           // the MQTT sources' ports
  std::vector<std::string> otherReadable;  // files the configuration names outside the home
};

struct PreparedBroker {
  Policy policy;
  LinuxPlan plan;                           // the Linux backend's
  std::optional<SeatbeltProfile> seatbelt;  // the Seatbelt backend's, instead of the plan
  std::vector<std::string> env;  // the broker's whole environment
  std::string mode;              // "full" or "degraded"
  std::vector<std::string> notes;
};

// `ids` are used when pined runs as root (probe.root): the home is prepared for them and the
// broker runs as them. Throws std::runtime_error saying why and what to do: fail closed.
PreparedBroker prepareBrokerSandbox(const BrokerSandboxRequest& request, const Probe& probe,
                                    const LinuxOptions& options, SandboxIds ids, Backend backend = Backend::Linux);

}  // namespace pine::sandbox
