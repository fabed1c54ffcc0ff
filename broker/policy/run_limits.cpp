#include "broker/policy/run_limits.h"

#include <algorithm>
#include <cstdio>

namespace pine::policy {
namespace {

// Two decimals, up to four where they matter: a day of small calls costs 0.0141, not "0.01".
std::string money(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  std::string s = buf;
  while (s.size() > 2 && s[s.size() - 3] != '.' && s.back() == '0') s.pop_back();
  return s;
}

}  // namespace

std::optional<std::string> checkDelegation(const std::vector<std::string>& chain, const std::string& target,
                                           int maxDepth, const config::AgentConfig& from) {
  const auto& to = from.delegateTo;
  if (std::find(to.begin(), to.end(), "*") == to.end() && std::find(to.begin(), to.end(), target) == to.end())
    return "agent '" + from.id + "' may not delegate to '" + target +
           "': it is not on its agent.yaml delegateTo list; add it there if it should";
  std::vector<std::string> full = chain;
  if (full.empty() || full.back() != from.id) full.push_back(from.id);
  if (std::find(full.begin(), full.end(), target) != full.end()) {
    std::string path;
    for (const auto& a : full) path += a + " -> ";
    return "delegation loop: " + path + target + "; answer from what you have instead";
  }
  if (static_cast<long long>(full.size()) > maxDepth)
    return "delegation to '" + target + "' would be " + std::to_string(full.size()) +
           " levels deep; limits.delegationDepth is " + std::to_string(maxDepth);
  return std::nullopt;
}

std::optional<std::string> checkHops(int hops, int maxHops) {
  if (hops > maxHops)
    return "the event has been passed on " + std::to_string(hops) + " times; limits.eventHops is " +
           std::to_string(maxHops) + ", so it is dropped (agents publishing to each other in a circle?)";
  return std::nullopt;
}

std::optional<std::string> checkQueue(size_t queued, int maxQueued) {
  if (maxQueued < 0 || queued >= static_cast<size_t>(maxQueued))
    return std::to_string(queued) + " tasks are already waiting for this agent; limits.queuePerAgent is " +
           std::to_string(maxQueued) + ", so this one is refused";
  return std::nullopt;
}

std::string clipUntrustedPrompt(std::string_view text, size_t maxBytes) {
  if (text.size() <= maxBytes) return std::string(text);
  const std::string note = "\n[pine: cut, the original was " + std::to_string(text.size()) + " bytes]";
  size_t keep = maxBytes > note.size() ? maxBytes - note.size() : 0;
  // Back up to the start of a character: never leave half of one.
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;
  return std::string(text.substr(0, keep)) + note;
}

std::optional<std::string> checkBudget(const config::Budget& budget, const BudgetUse& use) {
  if (budget.tokensPerDay && use.tokensToday >= *budget.tokensPerDay)
    return std::to_string(use.tokensToday) + " tokens used today; the agent's budget.tokensPerDay is " +
           std::to_string(*budget.tokensPerDay) + " (raise it in agent.yaml or wait until tomorrow)";
  if (budget.costPerDay && use.costToday >= *budget.costPerDay)
    return "cost today " + money(use.costToday) + "; the agent's budget.costPerDay is " + money(*budget.costPerDay) +
           " (raise it in agent.yaml or wait until tomorrow)";
  if (budget.costPerTask && use.costThisTask >= *budget.costPerTask)
    return "this task has cost " + money(use.costThisTask) + "; the agent's budget.costPerTask is " +
           money(*budget.costPerTask) + " (raise it in agent.yaml or split the task)";
  return std::nullopt;
}

RepeatBreaker::RepeatBreaker(int maxSame) : maxSame_(maxSame < 1 ? 1 : maxSame) {}

bool RepeatBreaker::tripped(const std::string& tool, const nlohmann::json& args) {
  if (count_ > 0 && tool == lastTool_ && args == lastArgs_) {
    ++count_;
  } else {
    count_ = 1;
    lastTool_ = tool;
    lastArgs_ = args;
  }
  return count_ >= maxSame_;
}

}  // namespace pine::policy
