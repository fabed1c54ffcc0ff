// How a LinuxPlan reaches pine-launch: a Cap'n Proto message (proto/launch.capnp)
// in a sealed memfd the launcher finds on fd 4; it reports a failure on fd 5 (a
// pipe whose writing end closes, unwritten, when the program's exec succeeded).
// The caller (pined's spawnChild, pinectl sandbox run) computes everything; the
// launcher only carries it out.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/linux/plan.h"

namespace pine::sandbox {

constexpr int kLaunchPlanFd = 4;    // the plan, read once and closed
constexpr int kLaunchReportFd = 5;  // one LaunchReport when something failed; closed at exec

struct LaunchTarget {
  std::string program;            // absolute path
  std::vector<std::string> args;  // argv, argv[0] included
  std::vector<std::string> env;   // the whole environment
};

// What fd 5 receives, once, when entering the sandbox or exec failed (enter.h's LaunchStage).
struct LaunchReport {
  int32_t stage;
  int32_t err;
};

// Caller side: the plan and the program as one message in a sealed memfd, close-on-exec, at fd
// 10 or above (so that arranging fds 0 to 5 never overwrites it). Throws std::runtime_error.
int writeLaunchPlan(const LinuxPlan& plan, const LaunchTarget& target);

struct LaunchRequest {
  LinuxPlan plan;  // without notes
  LaunchTarget target;
};

// Launcher side: reads the message on `fd` (which must be sealed against writing) and checks
// what it will pass to the kernel as C strings. Throws std::runtime_error saying what is wrong.
LaunchRequest readLaunchPlan(int fd);

// "landlock_restrict_self: Operation not permitted".
std::string describeLaunchReport(const LaunchReport& report);

}  // namespace pine::sandbox
