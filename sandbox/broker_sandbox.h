// Assembles the broker's sandbox from pine's home (the broker's counterpart of
// sandbox/agent_sandbox.h): its policy (sandbox/policy.h brokerPolicy), what it
// needs of the home when pined runs as root (the host's shareHomeWithBroker), and
// the backend's launch (sandbox_host.h). Platform-neutral.
#pragma once
#include <string>
#include <vector>

#include "sandbox/sandbox_host.h"

namespace pine::sandbox {

struct BrokerSandboxRequest {
  std::string home;                        // pine's home
  std::string program;                     // the broker program pined runs
  std::vector<int> listenPorts;            // the control API's TCP port
  std::vector<int> connectPorts;           // none today: MQTT sessions run in pine-mqtt (openMqtt)
  std::vector<std::string> otherReadable;  // files the configuration names outside the home
  std::vector<std::string> watchedFolders;  // folder sources' folders (read-only)
};

// `ids` are used when pined runs as root (host.root()): the home is prepared for them and the
// broker runs as them. Its cwd is data/. Throws std::runtime_error saying why and what to do:
// fail closed.
PreparedSandbox prepareBrokerSandbox(const BrokerSandboxRequest& request, const SandboxHost& host, SandboxIds ids);

}  // namespace pine::sandbox
