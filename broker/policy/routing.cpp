#include "broker/policy/routing.h"

#include "broker/policy/quote.h"
#include "broker/policy/topics.h"

namespace pine::policy {

std::vector<RouteTarget> routeEvent(const config::Home& home, const EventFacts& event) {
  std::vector<RouteTarget> out;
  const bool fromAgent = startsWith(event.source, "agent:");
  for (const auto& r : home.pine.routes) {
    if (!r.source.empty() && r.source != event.source) continue;
    if (!r.topic.empty() && !topicMatches(r.topic, event.topic)) continue;
    if (!home.agents.count(r.agent)) continue;
    config::Trust trust = event.trust;
    if (r.trust == config::Trust::Untrusted) trust = config::Trust::Untrusted;
    // An agent's untrusted publish carries outside content: declaring the route
    // trusted must not launder it into an owner run.
    if (r.trust == config::Trust::Owner && !(fromAgent && event.trust == config::Trust::Untrusted))
      trust = config::Trust::Owner;
    out.push_back(RouteTarget{r.name, r.agent, r.prompt, trust});
  }
  return out;
}

std::string untrustedSession(const std::string& agent) { return agent + "~u"; }

bool isUntrustedSession(const std::string& session) { return endsWith(session, "~u"); }

RunPlan planRun(const config::AgentConfig& agent, config::Trust trust, const std::string& conversation) {
  RunPlan plan;
  plan.trust = trust;
  if (trust == config::Trust::Owner) {
    plan.session = conversation.empty() ? agent.id : conversation;
    return plan;
  }
  if (!agent.untrusted.accept) {
    plan.accepted = false;
    plan.reason = "agent '" + agent.id + "' does not take tasks started by outside content (its agent.yaml has " +
                  "'untrusted: false'); route such events to another agent or allow them there";
    return plan;
  }
  plan.session = untrustedSession(agent.id);
  return plan;
}

}  // namespace pine::policy
