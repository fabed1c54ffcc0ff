// Schedules (layer 7): what a schedule starts counts as the owner's wish, so
// making one must be.
#pragma once
#include <string>

#include "broker/policy/approval_rules.h"
#include "broker/policy/verdict.h"
#include "config/model.h"

namespace pine::policy {

inline constexpr int kMinScheduleIntervalSec = 60;

enum class ScheduleTarget { ThisConversation, ThisAgent, OtherAgent, AllAgents };

struct ScheduleRequest {
  ScheduleTarget target = ScheduleTarget::ThisConversation;
  std::string agent;     // OtherAgent: its id
  int intervalSec = 0;   // 0: a cron schedule
  std::string task;
};

// In order: reduced runs refused; an interval under 60 s refused; for another
// agent or for all agents: the main agent only, and asked; tainted: asked in
// every mode (bypass included), never "always"; for itself from a side
// conversation: asked (bypass skips this); manual: asked; else allowed.
Verdict decideSchedule(const config::AgentConfig& agent, const SessionFacts& facts, const ScheduleRequest& req);

}  // namespace pine::policy
