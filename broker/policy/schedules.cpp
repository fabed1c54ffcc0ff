#include "broker/policy/schedules.h"

#include "broker/policy/quote.h"

namespace pine::policy {

Verdict decideSchedule(const config::AgentConfig& agent, const SessionFacts& facts, const ScheduleRequest& req) {
  if (facts.untrustedRun)
    return refused("a run started by outside content (or by a separate subscription) has no schedules tool");
  if (req.intervalSec != 0 && req.intervalSec < kMinScheduleIntervalSec)
    return refused("an interval an agent sets is at least " + std::to_string(kMinScheduleIntervalSec) +
                   " seconds (asked for " + std::to_string(req.intervalSec) + "); use 60 or more");
  const bool tainted = facts.tainted || facts.untrustedRun;
  const std::string task = req.task.empty() ? "" : " (task: " + quoteText(req.task, 200) + ")";
  if (req.target == ScheduleTarget::AllAgents || req.target == ScheduleTarget::OtherAgent) {
    const std::string whom = req.target == ScheduleTarget::AllAgents ? "all agents" : "agent " + quoteText(req.agent);
    if (agent.id != "main")
      return refused("only the main agent schedules for " +
                     std::string(req.target == ScheduleTarget::AllAgents ? "all agents" : "other agents") +
                     "; agent '" + agent.id + "' can schedule for itself");
    return asked("a schedule for " + whom + " acts in your name" + task +
                 (tainted ? "; note: " + taintWords(facts) : ""));
  }
  // Tainted asks in every mode, bypass (even "anyway") included: a sentence on a
  // web page must not turn into something done every hour.
  if (tainted) return asked("a schedule acts in your name, and " + taintWords(facts) + task);
  config::Mode mode = effectiveMode(facts);
  if (req.target == ScheduleTarget::ThisAgent && !facts.mainConversation && mode != config::Mode::Bypass)
    return asked("a schedule for the agent itself, made from a side conversation" + task);
  if (mode == config::Mode::Manual) {
    if (alwaysCovers(facts, "tool:schedules")) return allowed("your 'always' answer (tool:schedules) covers it");
    return asked("manual mode: a schedule waits for you" + task, "tool:schedules");
  }
  return allowed("a schedule for this conversation or, from its main conversation, for the agent itself");
}

}  // namespace pine::policy
