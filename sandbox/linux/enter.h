// The Linux backend's two entry points: buildLinuxPlan() in the supervisor,
// before fork (everything that allocates or reads directories happens here),
// and enterSandboxAndExec() in the forked child, which ends in execve.
//
//   LinuxPlan plan = buildLinuxPlan(policy, options, probe);   // may throw
//   pid_t pid = fork();
//   if (pid == 0) {
//     ... fd 3, close the rest, setsid, parent-death signal ...
//     enterSandboxAndExec(plan, {path, argv, envp, reportOnErrorPipe, &errPipe});
//   }
//
// With a pid namespace the call makes two more processes (see README): the
// process the supervisor forked stays outside as a monitor that forwards
// signals and reproduces the worker's exit status; the namespace's init (pid 1)
// reaps orphans; the worker, pid 2 inside, is the one that execs. Killing the
// monitor kills everything inside (parent-death signals, then the namespace).
#pragma once
#include <linux/filter.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "sandbox/linux/landlock.h"
#include "sandbox/linux/namespaces.h"
#include "sandbox/linux/probe.h"
#include "sandbox/policy.h"

namespace pine::sandbox {

struct LinuxOptions {
  // When pined runs as root, workers run as this uid/gid with no supplementary
  // groups (default: nobody). Ignored otherwise: an unprivileged pined's
  // workers keep its uid, inside a user namespace where available.
  uid_t workerUid = 65534;
  gid_t workerGid = 65534;
  int minLandlockAbi = 1;          // refuse below this
  bool requireNamespaces = false;  // refuse a degraded backend
  bool useNamespaces = true;       // false: Landlock + seccomp only (tests of the degraded path)
  std::string cwd;                 // the worker's working directory (its workspace); empty: "/"
  // An empty folder and an empty file, mode 000, that a mount namespace binds over the denyRead
  // paths inside readable trees (ns::computeMasks). Unset, or without a mount namespace, Landlock
  // carves those paths out instead, at the cost of a rule for every neighbour on the way down.
  std::string maskDir, maskFile;
};

struct LinuxPlan {
  // Namespaces (all decided from the probe).
  bool newUserNs = false, newMountNs = false, newNetNs = false, newPidNs = false, newIpcNs = false;
  bool mountProc = false;
  bool loopbackUp = false;
  std::string uidMap, gidMap;  // for a user namespace: "uid uid 1\n"
  std::vector<ns::Bind> binds;
  // Credentials.
  bool changeIds = false;  // setgroups/setresgid/setresuid to the worker's ids
  uid_t uid = 0;
  gid_t gid = 0;
  int lastCap = 40;
  // Landlock, then seccomp.
  landlock::ChildPlan landlock;
  std::vector<sock_filter> seccomp;
  std::string cwd = "/";
  // What this plan does not enforce that the policy asks for, and degraded
  // parts, in words: the lead writes them to the audit log.
  std::vector<std::string> notes;
};

struct PlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Fail closed: throws PlanError (with what to do) when refuseReason() says so,
// or when the plan cannot be made. Creates a missing `.git/hooks` it guards.
LinuxPlan buildLinuxPlan(const Policy& policy, const LinuxOptions& options, const Probe& probe);

// The program to run in the sandbox, and how to report a failure to get there.
struct ExecTarget {
  const char* path;
  char* const* argv;
  char* const* envp;
  // Called with an errno value when entering the sandbox or exec fails, in whichever process
  // failed; async-signal-safe (write to an error pipe, say). The process _exits 127 after it.
  void (*fail)(int err, const void* ctx);
  const void* ctx;
};

// In the forked child, after its descriptors are arranged: enters the sandbox
// and execs `target`; never returns. Order: namespaces (and, with a pid
// namespace, the init and the worker made with CLONE_VM, see README), mounts,
// loopback, drop groups/gid/uid and every capability (bounding, ambient,
// securebits locked), parent-death signal again, chdir, no_new_privs,
// Landlock, seccomp, execve. Async-signal-safe, no allocation but the two
// stacks (mmap) of a pid namespace's init and worker.
[[noreturn]] void enterSandboxAndExec(const LinuxPlan& plan, const ExecTarget& target) noexcept;

// When pined runs as root: hand the agent's own folders (workspace, private
// home, temp) to the worker's uid, recursively and without following links,
// and make the folders above them up to and including `stopAt` traversable
// (o+x, never readable) so the worker can reach them. Throws with the path.
void prepareWorkerOwnership(const std::vector<std::string>& roots, const std::string& stopAt, uid_t uid,
                            gid_t gid);

// When pined runs as root: lets the worker's uid read these trees without owning them (o+rx on
// folders, o+r on regular files, o+x on the folders above up to stopAt). Links are left alone.
void shareReadOnly(const std::vector<std::string>& roots, const std::string& stopAt);

}  // namespace pine::sandbox
