#include "pinectl/cmd_sandbox.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <iostream>

#include "common/sanitizer_env.h"
#include "common/fd.h"
#include "common/names.h"
#include "common/unix_socket.h"
#include "config/load.h"
#include "sandbox/agent_sandbox.h"
#include "sandbox/linux/launch_plan.h"

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
  sandbox::AgentSandboxes boxes(home, programDir(), sandbox::probeKernel());
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
  // Entered by pine-launch, as pined enters a worker's: the plan on its fd 4, a report pipe on fd 5,
  // the terminal on 0 to 2 and nothing else of pinectl's (sandbox/launcher/README.md).
  int planFd = -1, report[2];
  try {
    planFd = sandbox::writeLaunchPlan(box.plan, {program, command, box.env});
  } catch (std::exception& e) {
    std::cerr << "pinectl: " << e.what() << "\n";
    return 125;
  }
  if (pipe2(report, O_CLOEXEC) != 0) {
    std::cerr << "pinectl: pipe: " << strerror(errno) << "\n";
    return 125;
  }
  // Above every fd the child arranges (0 to 5).
  int high = fcntl(report[1], F_DUPFD_CLOEXEC, 10);
  close(report[1]);
  report[1] = high;
  if (report[1] < 0) {
    std::cerr << "pinectl: fcntl: " << strerror(errno) << "\n";
    return 125;
  }
  std::string launcher = programDir() + "/pine-launch";
  std::vector<std::string> launcherEnv = sanitizerEnvironment(false);
  std::vector<char*> envp;
  for (auto& e : launcherEnv) envp.push_back(e.data());
  envp.push_back(nullptr);
  char* const argv[] = {launcher.data(), nullptr};
  pid_t pid = fork();
  if (pid < 0) {
    std::cerr << "pinectl: fork: " << strerror(errno) << "\n";
    return 125;
  }
  if (pid == 0) {
    if (dup2(planFd, sandbox::kLaunchPlanFd) < 0 || dup2(report[1], sandbox::kLaunchReportFd) < 0) _exit(125);
    close(3);
    closeFrom(6);
    execve(launcher.c_str(), argv, envp.data());
    const char* msg = "pinectl: cannot run pine-launch, which should be installed beside pinectl\n";
    ssize_t ignored = write(2, msg, strlen(msg));
    (void)ignored;
    _exit(125);
  }
  close(planFd);
  close(report[1]);
  sandbox::LaunchReport failed{};
  ssize_t n;
  do n = read(report[0], &failed, sizeof failed);
  while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == (ssize_t)sizeof failed) {
    std::cerr << "pinectl: cannot run the command in the sandbox: " << sandbox::describeLaunchReport(failed) << "\n";
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return 125;
  }
  // The terminal's signals reach the child directly; pinectl only waits for it.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace pine
