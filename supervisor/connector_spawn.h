// Starting a connector (pine-mqtt, pine-mcp-remote): exec'd through pine-launch into the egress
// sandbox (network, libraries, the CA folders; no home, no .env, nothing written), with `LANG`
// (and a sanitizer build's settings) as its whole environment, its path as its command line and
// `fd3` as its one link. Its job goes on that link afterwards, never in argv or the environment.
#pragma once
#include <sys/types.h>

#include <string>

namespace pine {

class Supervisor;

// Throws std::exception saying why when the sandbox cannot be built or the exec fails: no
// connector runs unconfined.
pid_t spawnConnector(Supervisor& sup, const std::string& program, int fd3, const std::string& label);

}  // namespace pine
