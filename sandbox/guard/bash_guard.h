// The bash guard: defence in depth in front of the OS sandbox, never instead of
// it. It normalises a shell command (quotes, escapes, expansions it can resolve,
// wrappers such as env/xargs/sh -c/eval) and refuses destructive commands aimed
// at home or root, inline interpreter code, registry publish verbs, git escape
// hatches, network tools, credential reads and shell writes into protected paths.
// What it cannot read with certainty it refuses (fail closed).
#pragma once
#include <string>
#include <string_view>

namespace pine::guard {

struct Verdict {
  bool allowed = false;
  std::string reason;  // why it was refused; empty when allowed
};

// Classifies one shell command (it may hold several lines, pipelines, ...).
Verdict checkBashCommand(std::string_view command);

}  // namespace pine::guard
