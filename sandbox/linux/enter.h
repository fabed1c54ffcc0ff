// The sandboxed process's half of the Linux backend: enterSandboxAndExec()
// carries out a LinuxPlan (plan.h) and ends in execve. It runs in pine-launch,
// the small program pined and pinectl start instead of forking themselves into
// a sandbox (sandbox/launcher/README.md): a fresh image that holds no secret.
//
//   pine-launch: LinuxPlan plan = readLaunchPlan(4, ...);   // launch_plan.h
//                enterSandboxAndExec(plan, {path, argv, envp, reportOnFd5, ctx});
//
// With a pid namespace the call makes two more processes (see README): the
// launcher stays outside as a monitor that forwards signals and reproduces the
// worker's exit status; the namespace's init (pid 1) reaps orphans; the worker,
// pid 2 inside, is the one that execs. Killing the monitor kills everything
// inside (parent-death signals, then the namespace).
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "sandbox/linux/plan.h"

namespace pine::sandbox {

// The step that failed, as the launcher reports it (with an errno value) to whoever started it.
enum LaunchStage : int {
  kStagePlan = 1,      // reading the plan (pine-launch)
  kStageNamespaces,    // unshare
  kStageIdMaps,        // uid_map / gid_map of a user namespace
  kStageParentDeath,   // the parent died, or the parent-death signal could not be armed
  kStagePidNamespace,  // making the namespace's init and worker
  kStageMounts,        // binds, masks, /proc
  kStageLoopback,
  kStageCredentials,   // groups, ids, capabilities, securebits
  kStageChdir,
  kStageNoNewPrivs,
  kStageLandlock,
  kStageSeccomp,
  kStageExec,
};
// "unshare", "landlock_restrict_self", ...: for the message pined logs and audits.
const char* launchStageName(int stage) noexcept;

// The program to run in the sandbox, and how to report a failure to get there.
struct ExecTarget {
  const char* path;
  char* const* argv;
  char* const* envp;
  // Called with the step and an errno value when entering the sandbox or exec fails, in whichever
  // process failed; async-signal-safe (write to an error pipe, say). The process _exits 127 after it.
  void (*fail)(int stage, int err, const void* ctx);
  const void* ctx;
};

// In the launcher, after its descriptors are arranged: enters the sandbox and
// execs `target`; never returns. Order: namespaces (and, with a pid
// namespace, the init and the worker made with CLONE_VM, see README), mounts,
// loopback, drop groups/gid/uid and every capability (bounding, ambient,
// securebits locked), parent-death signal again, chdir, no_new_privs,
// Landlock, seccomp, execve. Async-signal-safe, no allocation but the two
// stacks (mmap) of a pid namespace's init and worker.
[[noreturn]] void enterSandboxAndExec(const LinuxPlan& plan, const ExecTarget& target) noexcept;

}  // namespace pine::sandbox
