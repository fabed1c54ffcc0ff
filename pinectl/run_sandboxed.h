// The part of `pinectl sandbox run` that differs by platform: starting the command in the
// sandbox AgentSandboxes prepared and waiting for it. Linux (run_sandboxed_linux.cpp): pine-launch
// enters the plan; macOS (run_sandboxed_macos.cpp, written for it, not compiled on a Mac here):
// sandbox-exec applies the profile. Chosen in pinectl/meson.build.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "sandbox/sandbox_host.h"

namespace pine {

// Runs `command` (its program found at `program`) in `box` with the terminal on 0 to 2 and
// nothing else of pinectl's; returns its exit status (128 + signal), or 125 when it could not be
// started in the sandbox, saying why on stderr.
int runSandboxed(const sandbox::PreparedSandbox& box, const std::string& program,
                 const std::vector<std::string>& command);

// Waits for the started command, leaving the terminal's signals to it: its exit status, or 128 +
// the signal that ended it (cmd_sandbox.cpp; both platforms' runSandboxed end with it).
int waitForCommand(pid_t pid);

}  // namespace pine
