#include "pinectl/cmd_sandbox.h"

#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "common/names.h"
#include "common/unix_socket.h"
#include "config/load.h"
#include "pinectl/run_sandboxed.h"
#include "sandbox/agent_sandbox.h"

namespace pine {
namespace {

// The command is looked up on the sandbox's PATH, not pinectl's.
std::string findProgram(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (auto& e : env)
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::string candidate = dir + "/" + name;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

}  // namespace

int waitForCommand(pid_t pid) {
  // The terminal's signals reach the child directly; pinectl only waits for it.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

int cmdSandboxRun(const std::string& home, const std::string& agent, bool tainted,
                  const std::vector<std::string>& command) {
  if (!isValidAgentId(agent)) {
    std::cerr << "pinectl: '" << agent << "' is not an agent id ([a-z0-9_-], 1 to 64 bytes)\n";
    return 2;
  }
  if (command.empty()) {
    std::cerr << "pinectl: nothing to run: pinectl sandbox run --agent NAME -- CMD ARGS...\n";
    return 2;
  }
  sandbox::AgentSandboxes boxes(home, programDir(), sandbox::makeSandboxHost(sandbox::platformBackend()));
  sandbox::PreparedSandbox box;
  try {
    // The agent's skills, as pined would mount them; a home whose configuration does not load gets none.
    sandbox::AgentSandboxRequest request{agent, {}, tainted, false, {}};
    config::LoadOptions quiet;
    quiet.skipEnv = true;  // only the skills list is wanted: no secrets read for it
    auto loaded = config::loadHome(home, quiet);
    if (loaded.ok())
      for (const auto& skill : loaded.home->pine.skills)
        if (skill.agent.empty() || skill.agent == agent) request.skills.push_back(skill.name);
    box = boxes.prepare(request);
  } catch (std::exception& e) {
    std::cerr << "pinectl: no sandbox for agent " << agent << ": " << e.what() << "\n";
    return 125;
  }
  std::string program = findProgram(command[0], box.env);
  if (program.empty()) {
    std::cerr << "pinectl: " << command[0] << ": not found on the sandbox's PATH\n";
    return 127;
  }
  return runSandboxed(box, program, command);
}

}  // namespace pine
