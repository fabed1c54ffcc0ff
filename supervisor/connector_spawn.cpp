#include "supervisor/connector_spawn.h"

#include "common/sanitizer_env.h"
#include "common/unix_socket.h"
#include "supervisor/egress_call.h"
#include "supervisor/spawn.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

std::string folderOf(const std::string& path) { return path.substr(0, path.find_last_of('/')); }

}  // namespace

std::string connectorProgram(const std::string& name) { return programDir() + "/" + name; }

pid_t spawnConnector(Supervisor& sup, const std::string& program, int fd3, const std::string& label) {
  // The egress process's sandbox fits connectors as well: network, libraries, the CA folders.
  return spawnConnectorIn(sup, egressSandbox(program, sup.home().root, sup.sandboxHost()), program, fd3, label);
}

pid_t spawnConnectorIn(Supervisor& sup, const sandbox::PreparedSandbox& box, const std::string& program, int fd3,
                       const std::string& label) {
  SpawnSpec spawn;
  spawn.program = program;
  spawn.args = {program};
  spawn.env = {"LANG=C.UTF-8"};
  for (auto& e : sanitizerEnvironment(true)) spawn.env.push_back(std::move(e));
  spawn.fd3 = fd3;
  sup.useSandbox(spawn, box);
  spawn.launcher = sup.options().launcherProgram.empty() ? folderOf(program) + "/pine-launch"
                                                         : sup.options().launcherProgram;
  spawn.label = label;
  return spawnChild(spawn);
}

}  // namespace pine
