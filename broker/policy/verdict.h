// The answer of every decide* function: go ahead, ask the owner, or refuse.
#pragma once
#include <string>
#include <utility>

namespace pine::policy {

enum class Decision { Allow, Ask, Refuse };

// Fail closed by construction: a Verdict nobody decided refuses.
struct Verdict {
  Decision decision = Decision::Refuse;
  std::string reason = "no rule decided this call";  // for Ask and Refuse: why, in the owner's words; for Allow: which rule let it pass
  bool alwaysOffered = false; // Ask only: "always in this conversation" may be answered
  std::string alwaysScope;    // what such an answer covers ("tool:bash", "mcp:calendar")
  bool bypassPaused = false;  // the configured bypass is paused because the session is tainted
};

inline Verdict allowed(std::string why) { return Verdict{Decision::Allow, std::move(why), false, {}, false}; }
inline Verdict refused(std::string why) { return Verdict{Decision::Refuse, std::move(why), false, {}, false}; }
// An "always" answer is offered only with the scope it would cover.
inline Verdict asked(std::string why, std::string alwaysScope = {}) {
  bool offer = !alwaysScope.empty();
  return Verdict{Decision::Ask, std::move(why), offer, std::move(alwaysScope), false};
}

}  // namespace pine::policy
