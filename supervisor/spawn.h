// The mechanism of starting a child: the "process start" interface, one
// implementation per platform, chosen in supervisor/meson.build.
// - spawn_linux.cpp: a vfork-like clone whose only work is to arrange
//   descriptors, start a session, arm the parent-death signal and exec. A child
//   in a Linux plan is entered by pine-launch (sandbox/launcher/), a fresh image
//   that receives the plan on a descriptor.
// - spawn_posix.cpp (macOS): posix_spawn, for the Seatbelt backend or no sandbox.
// No fork of pined outlives the moment before its exec. Policy (what a child may
// reach) is decided elsewhere and arrives as arguments.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace pine::sandbox {
struct LinuxPlan;
struct SeatbeltProfile;
}

namespace pine {

struct SpawnSpec {
  std::string program;            // absolute path
  std::vector<std::string> args;  // argv, argv[0] included
  std::vector<std::string> env;   // the whole environment: nothing is inherited
  int fd3 = -1;                   // becomes the child's fd 3 (its one link); -1 for none
  int stdinFd = -1;               // -1: /dev/null
  int stdoutFd = -1;              // -1: inherit ours
  int stderrFd = -1;              // -1: inherit ours
  // Carried out by pine-launch just before the program's exec; null: the program runs unconfined.
  const sandbox::LinuxPlan* sandbox = nullptr;
  std::string launcher;           // pine-launch; empty: the one beside this program (pined's bin/)
  // Or a Seatbelt profile: the child execs `sandboxExec -p PROFILE -D ... -- program args`, with
  // the environment and fd 3 as above; sandbox-exec applies the profile and execs the program.
  const sandbox::SeatbeltProfile* seatbelt = nullptr;
  std::string sandboxExec;        // /usr/bin/sandbox-exec (tests: a stand-in); required with seatbelt
  std::string cwd;                // the working directory when no plan sets it; empty: pined's
  std::string label;              // pine-launch's argv[1], for ps: "worker t-12" (optional)
};

// Starts the child in a new session (it leads its own process group, so it and
// everything it starts can be signalled together), with SIGKILL as its
// parent-death signal (Linux; macOS has none), signals unblocked and at their
// defaults, stdin on /dev/null (or stdinFd) and every descriptor above 3 closed, then inside
// its sandbox when one is given. Throws std::runtime_error when the sandbox could
// not be entered or the program could not be executed, with the step that failed
// and why; on macOS also for a Linux plan (`sandbox`), which cannot be entered there.
pid_t spawnChild(const SpawnSpec& spec);

// The command line that starts spec.program under spec.seatbelt: sandboxExec -p PROFILE -D ...
// -- program args (spawn_seatbelt.cpp; both platforms' spawnChild use it). Throws when
// sandboxExec is not an absolute path.
std::vector<std::string> seatbeltArgv(const SpawnSpec& spec);

// The pine-launch installed beside the running program (Linux: spawn_linux.cpp).
std::string defaultLauncher();

}  // namespace pine
