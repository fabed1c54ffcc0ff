// runSandboxed() on macOS (run_sandboxed.h): sandbox-exec applies the agent's profile, the same
// command line pined starts a worker with (supervisor/spawn_seatbelt.cpp). Written for macOS, not
// compiled on a Mac here.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "common/fd.h"
#include "pinectl/run_sandboxed.h"

namespace pine {

int runSandboxed(const sandbox::PreparedSandbox& box, const std::string& program,
                 const std::vector<std::string>& command) {
  if (!box.seatbelt) {
    std::cerr << "pinectl: no Seatbelt profile for this sandbox\n";
    return 125;
  }
  std::vector<std::string> argv = command;
  argv[0] = program;
  argv = sandbox::sandboxExecArgv(*box.seatbelt, argv);
  argv[0] = std::string(sandbox::kSandboxExecPath);
  std::vector<std::string> env = box.env;
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    std::cerr << "pinectl: fork: " << strerror(errno) << "\n";
    return 125;
  }
  if (pid == 0) {
    closeFrom(3);
    if (chdir(box.cwd.c_str()) != 0) _exit(125);
    execve(args[0], args.data(), envp.data());
    const char* msg = "pinectl: cannot run /usr/bin/sandbox-exec\n";
    ssize_t ignored = write(2, msg, strlen(msg));
    (void)ignored;
    _exit(125);
  }
  return waitForCommand(pid);
}

}  // namespace pine
