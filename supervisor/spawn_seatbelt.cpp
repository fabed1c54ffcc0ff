// The one part of starting a child both platforms share: the sandbox-exec command line
// for a Seatbelt-confined child (spawn.h).
#include <stdexcept>

#include "sandbox/seatbelt/sbpl_profile.h"
#include "supervisor/spawn.h"

namespace pine {

std::vector<std::string> seatbeltArgv(const SpawnSpec& spec) {
  if (spec.sandboxExec.empty() || spec.sandboxExec[0] != '/')
    throw std::runtime_error("cannot start " + spec.program + ": no sandbox-exec to start it under");
  std::vector<std::string> command = spec.args;
  if (command.empty()) command.push_back(spec.program);
  command[0] = spec.program;
  std::vector<std::string> argv = sandbox::sandboxExecArgv(*spec.seatbelt, command);
  argv[0] = spec.sandboxExec;
  return argv;
}

}  // namespace pine
