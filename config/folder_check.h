// The rules for a folder source's `path` (the broker's sandbox grows by exactly that folder,
// read-only): absolute, canonical (no link on the way, so what is checked is what is watched),
// an existing folder, and never pine's home or a folder inside it (.env, the database, another
// agent's workspace) or one containing it; the one exception is a folder inside the workspace of
// the agent the source belongs to. sandbox/policy.cpp brokerPolicy refuses the same again.
#pragma once
#include <string>
#include <vector>

#include "config/model.h"

namespace pine::config {

// From the text alone: the problem, or "" when none.
// `agent`: the source's agent, empty for a source of all agents.
std::string folderPathProblem(const std::string& path, const std::string& homeDir, const std::string& agent);

// On the disk (links resolved on both sides): the problem, or "" when none.
std::string folderOnDiskProblem(const std::string& path, const std::string& homeDir, const std::string& agent);

// The folders of the home's folder sources, sorted, each once: what the broker's sandbox grants.
std::vector<std::string> watchedFolders(const Home& home);

}  // namespace pine::config
