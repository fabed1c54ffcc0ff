// The Linux sandbox host (sandbox_host.h): the kernel's probe and the Linux plan, uids of
// their own as root, a tainted run's trees. makeSandboxHost() makes one from a fresh probe;
// tests make one from a probe they changed.
#pragma once
#include <memory>

#include "sandbox/linux/plan.h"
#include "sandbox/linux/probe.h"
#include "sandbox/sandbox_host.h"

namespace pine::sandbox {

// `backend`: Linux's own, or Seatbelt's profiles (against a stand-in sandbox-exec, for tests).
std::shared_ptr<const SandboxHost> makeLinuxHost(Probe probe, LinuxOptions options, Backend backend = Backend::Linux);

}  // namespace pine::sandbox
