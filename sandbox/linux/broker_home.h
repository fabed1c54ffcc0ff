// When pined runs as root, the broker runs as a uid of its own that owns data/
// and reads the configuration through its group. Picking that uid and handing
// it what it needs is done here, by pined, before each broker start and after
// each configuration change. Every walk is descriptor-based (openat with
// O_NOFOLLOW), never follows or changes a link, never crosses a mount, never
// touches a file with more than one link, and changes an owner or mode only
// where it is wrong.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "sandbox/sandbox_options.h"  // SandboxIds, and pickBrokerIds(), defined in broker_home.cpp

namespace pine::sandbox {

// True when a process (other than zombies) runs with this real, effective or saved uid.
bool uidInUse(uid_t uid);

// Hands the broker what it needs of pine's home, when pined runs as root:
// - data/ (created if absent, with data/tmp) and everything in it to `ids.uid` (group left alone);
// - the home folder: group `ids.gid`, g+wx and the sticky bit: the broker may make its sockets
//   there, and remove or rename nothing but them (Landlock allows it only sockets anyway);
// - the files it reads: pine.{yaml,json}, models.{yaml,json}, USER.md, agents/ (each agent's
//   agent.{yaml,json} and AGENTS.md, not its workspace), skills/ and providers/: group `ids.gid`,
//   g+r (g+rx on folders).
// .env, sandbox/ and the workspaces are left as they are. Throws with the path that failed.
void prepareBrokerHome(const std::string& home, SandboxIds ids);

// Why `uid`/`gid` cannot walk down to `path` (a folder above it is not traversable for them), or
// "" when they can.
std::string untraversableReason(const std::string& path, uid_t uid, gid_t gid);

}  // namespace pine::sandbox
