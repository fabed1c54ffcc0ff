// Skills as the broker handles them: the index an agent's prompt lists, and the
// SKILL.md that add_skill writes (through pined, which alone writes the home).
#pragma once
#include <optional>
#include <string>

#include "config/model.h"

namespace pine {

// "- <name>: <description> (read <home>/skills/<name>/SKILL.md when a task calls for it)"
// for each skill of pine.yaml that is for `agent` or for every agent; "" when none.
std::string skillsIndex(const config::Home& cfg, const std::string& homeRoot, const std::string& agent);

// The description in a SKILL.md's front matter ("description: ..."), or "".
std::string skillDescription(const std::string& skillMd);

struct NewSkill {
  std::string name, description, instructions;
};
// Checks what a model proposed; the reason when it cannot be a skill.
std::optional<std::string> checkNewSkill(const NewSkill& s);
// The SKILL.md for a checked skill: front matter, then the instructions.
std::string skillFile(const NewSkill& s);

}  // namespace pine
