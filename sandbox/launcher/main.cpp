// pine-launch: the one program pined and pinectl start to put another program
// into its sandbox. pined never lets a fork of itself (whose memory holds every
// secret) live past the moment before its exec: this fresh image does the work
// of entering the sandbox instead, and stays behind as the monitor.
//
// What it may do, and everything it does:
//   - it starts with fds 0 to 3 meant for the program, the plan on fd 4 (a
//     sealed memfd) and a report pipe on fd 5; nothing else is open;
//   - its environment is empty (a sanitizer's settings aside): it holds no
//     secret and passes nothing of its own on;
//   - it reads the plan, which its starter computed in full, and decides
//     nothing: every path, id, rule and filter comes from the plan;
//   - it enters the sandbox (sandbox/linux/enter.h: namespaces, mounts, ids and
//     capabilities, no_new_privs, Landlock, seccomp) and execs the plan's
//     program, or writes the step that failed and its errno to fd 5 and exits 127;
//   - with a pid namespace it stays outside as the monitor: it forwards signals
//     and ends with the program's exit status.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "sandbox/linux/enter.h"
#include "sandbox/linux/launch_plan.h"
#include "common/version_flag.h"

extern char** environ;

namespace {

using namespace pine::sandbox;

void report(int stage, int err, const void*) {
  LaunchReport r{stage, err};
  ssize_t ignored = write(kLaunchReportFd, &r, sizeof r);
  (void)ignored;
}

[[noreturn]] void refuse(const std::string& why) {
  std::string line = "pine-launch: " + why + "\n";
  ssize_t ignored = write(2, line.data(), line.size());
  (void)ignored;
  report(kStagePlan, EINVAL, nullptr);
  _exit(127);
}

bool sanitizerSetting(const char* entry) {
  for (const char* name : {"ASAN_OPTIONS=", "UBSAN_OPTIONS=", "LSAN_OPTIONS="})
    if (strncmp(entry, name, strlen(name)) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** args) {
  if (pine::printedVersion(argc, args, "pine-launch")) return 0;
  // The report pipe closes at the program's exec: an exec that succeeded reports nothing.
  if (fcntl(kLaunchReportFd, F_SETFD, FD_CLOEXEC) != 0) {
    fprintf(stderr, "pine-launch is started by pined or pinectl, with its plan on fd 4 and a pipe on fd 5\n");
    return 127;
  }
  for (char** e = environ; *e; ++e)
    if (!sanitizerSetting(*e))
      refuse("started with an environment (" + std::string(*e).substr(0, std::string(*e).find('=')) +
             "): its starter must pass none, so that it holds no secret");

  LaunchRequest request;
  try {
    request = readLaunchPlan(kLaunchPlanFd);
  } catch (const std::exception& e) {
    refuse(e.what());
  }
  close(kLaunchPlanFd);

  std::vector<char*> argv, envp;
  for (auto& a : request.target.args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& v : request.target.env) envp.push_back(v.data());
  envp.push_back(nullptr);
  ExecTarget target{request.target.program.c_str(), argv.data(), envp.data(), report, nullptr};
  enterSandboxAndExec(request.plan, target);
}
