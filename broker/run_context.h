// One run's identity and the state its parts share (the gate, the broker-side tools, the
// model relay): which task, what started it, the configuration it started under, its tools,
// its journal, and why it must stop once something says so.
#pragma once
#include <memory>
#include <set>
#include <string>

#include "broker/policy/approval_rules.h"
#include "broker/policy/run_limits.h"
#include "broker/run_services.h"
#include "broker/sessions.h"
#include "broker/task_journal.h"

namespace pine {

struct RunContext {
  RunContext(RunServices& services_, std::string taskId_, RunRequest req_, std::shared_ptr<const config::Home> config_,
             std::set<std::string> tools_, int attempt_)
      : services(services_),
        taskId(std::move(taskId_)),
        req(std::move(req_)),
        config(std::move(config_)),
        tools(std::move(tools_)),
        attempt(attempt_),
        journal(services_.store(), taskId, attempt_) {}

  RunServices& services;
  const std::string taskId;
  const RunRequest req;
  const std::shared_ptr<const config::Home> config;  // as it was when the run started
  const std::set<std::string> tools;                 // the run's profile (policy::toolsForRun)
  const int attempt;                                 // 0, or how often the task was resumed
  TaskJournal journal;
  bool sandboxTainted = false;  // the worker's sandbox was built for a tainted conversation
  std::string stopReason;       // set when the run must stop (budget, a model repeating itself)
  policy::RepeatBreaker breaker{3};

  const config::AgentConfig& agent() const { return config->agents.at(req.agent); }
  bool untrusted() const { return req.trust == config::Trust::Untrusted; }
  // A conversation with the owner: the owner's own message, or a sub-agent working on it (not a
  // schedule, an event or another agent's delegation).
  bool withOwner() const {
    return req.trust == config::Trust::Owner && (req.origin == "owner" || req.origin.rfind("subagent:", 0) == 0);
  }
  policy::SessionFacts facts() const {
    auto f = services.sessions().facts(agent(), req.session, untrusted());
    f.withOwner = withOwner();
    return f;
  }
  bool tainted() const { return services.sessions().tainted(req.agent, req.session); }
};

}  // namespace pine
