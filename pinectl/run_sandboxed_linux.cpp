// runSandboxed() on Linux: entered by pine-launch, as pined enters a worker's (run_sandboxed.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "common/cloexec.h"
#include "common/fd.h"
#include "common/sanitizer_env.h"
#include "common/unix_socket.h"
#include "pinectl/run_sandboxed.h"
#include "sandbox/linux/launch_plan.h"

namespace pine {

int runSandboxed(const sandbox::PreparedSandbox& box, const std::string& program,
                 const std::vector<std::string>& command) {
  // Entered by pine-launch, as pined enters a worker's: the plan on its fd 4, a report pipe on fd 5,
  // the terminal on 0 to 2 and nothing else of pinectl's (sandbox/launcher/README.md).
  int planFd = -1, report[2];
  try {
    planFd = sandbox::writeLaunchPlan(*box.linuxPlan, {program, command, box.env});
  } catch (std::exception& e) {
    std::cerr << "pinectl: " << e.what() << "\n";
    return 125;
  }
  if (pipeCloexec(report) != 0) {
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
  return waitForCommand(pid);
}

}  // namespace pine
