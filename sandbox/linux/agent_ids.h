// When pined runs as root, the workers of each agent run as a uid of their own (and a
// gid of the same number), taken from a configured range: never 65534 (`nobody`, which
// other daemons use), never one an account, a group or a running process has, and
// never one another agent's folders carry. The choice is kept in the file system, not
// in a table: an agent keeps the id its workspace already belongs to.
#pragma once
#include <string>

#include "sandbox/linux/broker_home.h"

namespace pine::sandbox {

// The ids for `agent` in pine's home `home`: the owner of agents/<agent>/workspace when that
// is in [first, last] and no other agent's workspace or private home has it; otherwise the
// first id of the range that nothing has. Throws std::runtime_error saying which range to
// widen (pined --worker-ids) when none is left, or when the range is empty or starts at 0.
SandboxIds pickAgentIds(const std::string& home, const std::string& agent, uid_t first, uid_t last);

}  // namespace pine::sandbox
