// The supervisor's half of the Linux backend: buildLinuxPlan() turns a Policy
// into everything the sandboxed process will do, computed in full before
// anything is started (allocation, directory listings, the seccomp program).
// pine-launch receives the plan (launch_plan.h) and carries it out (enter.h).
#pragma once
#include <linux/filter.h>
#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "sandbox/linux/landlock.h"
#include "sandbox/linux/namespaces.h"
#include "sandbox/linux/probe.h"
#include "sandbox/policy.h"
#include "sandbox/sandbox_options.h"

namespace pine::sandbox {

// The ids, ranges and requirements are sandbox_options.h's SandboxOptions; the rest is Linux's.
struct LinuxOptions : SandboxOptions {
  bool useNamespaces = true;       // false: Landlock + seccomp only (tests of the degraded path)
  std::string cwd;                 // the working directory (a worker's workspace); empty: "/"
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
  // parts, in words: the lead writes them to the audit log. Not sent to pine-launch.
  std::vector<std::string> notes;
};

struct PlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Fail closed: throws PlanError (with what to do) when refuseReason() says so,
// or when the plan cannot be made. Creates a missing `.git/hooks` it guards.
LinuxPlan buildLinuxPlan(const Policy& policy, const LinuxOptions& options, const Probe& probe);

}  // namespace pine::sandbox
