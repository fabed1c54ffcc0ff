// What the running kernel offers the Linux backend, found by trying it (in a
// throwaway child where trying changes state), and the fail-closed decision
// on top of it.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace pine::sandbox {

struct Probe {
  bool root = false;          // effective uid 0: workers are dropped to an unprivileged uid
  int landlockAbi = 0;        // 0: no Landlock (not built in, or disabled at boot)
  bool seccomp = false;       // seccomp filter mode available
  bool userNs = false;        // an unprivileged user namespace can be made (used when not root)
  bool mountNs = false;       // a private mount namespace with bind mounts works
  bool netNs = false;         // an empty network namespace can be made
  bool pidNs = false;         // a pid namespace can be made
  bool ipcNs = false;
  bool procMount = false;     // a fresh /proc can be mounted in the new pid namespace
  int lastCap = 40;           // /proc/sys/kernel/cap_last_cap
  std::vector<std::string> notes;  // why something is missing, for the operator

  // No namespaces (or only some): Landlock and seccomp still hold, but the
  // guards that need a mount namespace fall back (see README) and a worker can
  // see other processes. The lead writes this to the audit log.
  bool degraded() const { return !(mountNs && netNs && pidNs && procMount); }
};

// Runs the probes (forks a child for the namespace ones: about a millisecond).
Probe probeKernel();

// One line per fact, for `pinectl check` and the audit log.
std::string describe(const Probe& p);

struct Requirements {
  bool sandbox = true;         // the agent's sandbox is on
  int minLandlockAbi = 1;      // configuration: refuse below this
  bool requireNamespaces = false;  // configuration: refuse a degraded backend
};

// Why a sandboxed task must be refused on this machine (with what to do about
// it), or nullopt when the backend can enforce a policy. Never "run unconfined".
std::optional<std::string> refuseReason(const Probe& p, const Requirements& r);

}  // namespace pine::sandbox
