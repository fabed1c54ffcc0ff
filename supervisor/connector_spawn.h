// Starting a connector program (pine-mqtt, pine-mcp-remote, pine-web): by exec through pine-launch, inside the
// egress sandbox (network, the libraries and CA folders read-only; no home, no .env, nothing
// written), environment LANG alone, command line its path, fd 3 its one link.
#pragma once
#include <sys/types.h>

#include <string>

#include "sandbox/sandbox_host.h"

namespace pine {

class Supervisor;

// The program `name` installed beside pined (its bin/; a test's --worker-program does not move it).
std::string connectorProgram(const std::string& name);

// Throws std::runtime_error saying why when the sandbox could not be built or entered: a
// connector never runs unconfined.
pid_t spawnConnector(Supervisor& sup, const std::string& program, int fd3, const std::string& label);

// The same in a sandbox of the caller's (pine-browser's, sandbox::browserPolicy).
pid_t spawnConnectorIn(Supervisor& sup, const sandbox::PreparedSandbox& box, const std::string& program, int fd3,
                       const std::string& label);

}  // namespace pine
