// The rules for a folder the owner opens for one conversation (pinectl chat /folder, PUT
// /v1/agents/{id}/folder; pine-security.md, "A conversation that you opened a folder for").
// The broker checks them for an early, clear error; pined checks them again when it builds the
// worker's sandbox, so a broker that lies cannot open pine's home. Pure: paths only.
#pragma once
#include <optional>
#include <string>

#include "sandbox/policy.h"

namespace pine::sandbox {

// The folder's canonical path (symlinks resolved), or throws PolicyError saying why it may not
// be opened for `paths.agentId` and what to do: not an absolute path, not an existing folder,
// "/" or a system folder (or inside one), or what no grant may open (pine's home, a parent of
// it, pine's program folder, another agent's folder or workspace; policy.h neverGrantableReason).
std::string checkOpenedFolder(const std::string& path, const AgentPaths& paths);

}  // namespace pine::sandbox
