// A program's own promise once it has started, like pledge(2) without "exec":
// execve and execveat fail with EPERM from now on, in every thread of the
// process (TSYNC) and in whatever it might still start. pine-broker makes it
// first thing in main(): the sandbox pine-launch put it in must let exactly one
// exec through (the broker's own), which a seccomp filter loaded before that
// exec cannot count. One file per platform (no_exec_dep, no libseccomp: whoever
// links it needs nothing else): no_exec_linux.cpp loads the filter; on macOS the
// broker's Seatbelt profile allows no exec but the program's own, so there is
// nothing to add: no_exec_macos.cpp returns 0. It sits in sandbox/, not
// sandbox/linux/, because pine-broker calls it on every platform.
#pragma once

namespace pine::sandbox {

// 0 or an errno value.
int forbidExec() noexcept;

}  // namespace pine::sandbox
