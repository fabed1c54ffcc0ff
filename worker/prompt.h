// The system prompt of a run: who the agent is and the rules it works under,
// from the files that say so. Owner rules (agents/<id>/AGENTS.md, USER.md for
// main, the skills index) come from the broker, as the worker cannot read
// pine's home; the workspace's AGENTS.md, SOUL.md and MEMORY.md, and a folder's
// AGENTS.md or CLAUDE.md, are read here, inside the sandbox.
#pragma once
#include <string>

namespace pine {

struct PromptFacts {
  std::string agent, instructions, workspace, folder, mode, trust;
  bool tainted = false;
};

std::string buildSystemPrompt(const PromptFacts& facts);

}  // namespace pine
