// Limits against runaway behaviour (layer 11): delegation depth and loops,
// event hops, queue length, untrusted prompt size, budgets, repeated calls.
// Each check returns why it refuses, or nullopt.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/model.h"

namespace pine::policy {

// `chain`: the agents from the origin up to and including `from` (`from` is
// added when missing). Refused: `target` not on from's delegateTo ("*" is any
// agent), already in the chain (a loop, also `from` itself), or a chain longer
// than maxDepth delegations.
std::optional<std::string> checkDelegation(const std::vector<std::string>& chain, const std::string& target,
                                           int maxDepth, const config::AgentConfig& from);

// `hops`: how many times the event has been passed on, this one included.
std::optional<std::string> checkHops(int hops, int maxHops);

// `queued`: tasks already waiting for the agent; one more must fit.
std::optional<std::string> checkQueue(size_t queued, int maxQueued);

// At most maxBytes (a note saying it was cut included, when maxBytes leaves room
// for it), cut at a UTF-8 character boundary.
std::string clipUntrustedPrompt(std::string_view text, size_t maxBytes);

struct BudgetUse {
  long long tokensToday = 0;
  double costToday = 0;
  double costThisTask = 0;
};
// Refused once a limit is reached (use >= limit).
std::optional<std::string> checkBudget(const config::Budget& budget, const BudgetUse& use);

// Stops a model that repeats itself: tripped() is true on the maxSame-th
// identical call (same tool, same arguments) in a row, and on every one after.
class RepeatBreaker {
 public:
  explicit RepeatBreaker(int maxSame = 3);
  bool tripped(const std::string& tool, const nlohmann::json& args);

 private:
  int maxSame_;
  int count_ = 0;
  std::string lastTool_;
  nlohmann::json lastArgs_;
};

}  // namespace pine::policy
