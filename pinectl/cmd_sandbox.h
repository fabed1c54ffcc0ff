// `pinectl sandbox run --agent NAME [--tainted] -- CMD ARGS...`: runs a command
// under exactly the sandbox that agent's shell gets (the same AgentSandboxes
// code pined uses) and returns its exit status.
#pragma once
#include <string>
#include <vector>

namespace pine {

int cmdSandboxRun(const std::string& home, const std::string& agent, bool tainted,
                  const std::vector<std::string>& command);

}  // namespace pine
