// Checkpoints of agents' workspaces (checkpoint/ does the work): pined runs pine-checkpoint by exec
// through pine-launch, in a sandbox of its own (no network; the libraries, the agent's workspace, and
// its checkpoint folder <home>/checkpoints/<agent>/, mode 700), as the agent's uid when pined is root.
// That folder is also handed over as the program's fd 0. No worker's sandbox names it (pine's home is
// never granted). pined reads the program's answer (one JSON object) and relays it unread.
#pragma once
#include <kj/async-io.h>

#include <string>
#include <vector>

namespace pine {

class Supervisor;

enum class CheckpointAccess { ReadWorkspace, WriteWorkspace };

// Runs `pine-checkpoint ARGS...` for agent (the workspace's path is added where the command takes
// it); resolves to its stdout (at most 64 MiB), or fails with the line it printed saying why.
kj::Promise<std::string> runCheckpoint(Supervisor& sup, kj::LowLevelAsyncIoProvider& io, const std::string& agent,
                                       const std::vector<std::string>& args, CheckpointAccess access);

// The checkpoint at a worker's start or end (phase "before" or "after"); a failure is logged and
// audited (checkpoint.failed), never stops the task.
kj::Promise<void> checkpointTask(Supervisor& sup, kj::LowLevelAsyncIoProvider& io, const std::string& task,
                                 const std::string& agent, const std::string& phase, bool tainted = false);

}  // namespace pine
