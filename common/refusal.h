// The words every refusal the agent sees ends with: a model that meets a wall tends to
// probe for a way around it (another tool, a script, another path); pine's answer is to
// ask. Shared by the broker (its gate and tools) and the worker (the path jail, the guard).
#pragma once
#include <string>
#include <string_view>

namespace pine {

inline constexpr std::string_view kAskInsteadOfProbing =
    " This is a limit pine enforces, not an error to work around: do not try another tool, script or path. "
    "If the task needs it, ask the owner with request_access (a path to read or write, or network for the "
    "shell) if this run has that tool; otherwise say in your answer what was refused.";

// `why` (a sentence, without the hint) followed by the hint; not added twice.
inline std::string withAskHint(std::string why) {
  if (why.find(kAskInsteadOfProbing) != std::string::npos) return why;
  if (!why.empty() && why.back() != '.') why += '.';
  return why + std::string(kAskInsteadOfProbing);
}

}  // namespace pine
