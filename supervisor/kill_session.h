// Ends every process left in a session: one file per platform (Linux walks /proc, macOS asks
// libproc), chosen in supervisor/meson.build.
#pragma once
#include <sys/types.h>

namespace pine {

// SIGKILL to every process whose session is `sid` (each child pined starts leads its own),
// pined itself and init excepted. A pid namespace ends a worker's descendants with it; without
// one (the Seatbelt backend, Linux without namespaces) a command the worker's shell put in a
// process group of its own would outlive a worker that was killed. Two passes: a process may
// fork while the first runs.
void killSession(pid_t sid);

}  // namespace pine
