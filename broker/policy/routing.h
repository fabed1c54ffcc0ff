// Routing (layer 2): which agents an event wakes, with which trust, and where
// the run it starts lives.
#pragma once
#include <string>
#include <vector>

#include "config/model.h"

namespace pine::policy {

struct EventFacts {
  std::string topic;
  std::string source;  // a source name, or "agent:<id>" for an agent's publish_event
  config::Trust trust = config::Trust::Untrusted;
  int hops = 0;  // checked by checkHops (run_limits.h), not here
};

struct RouteTarget {
  std::string route;
  std::string agent;
  std::string prompt;
  config::Trust trust = config::Trust::Untrusted;
};

// Every route whose `source` (when set) equals the event's and whose `topic`
// pattern (when set) matches, in configuration order. A route naming an agent
// that does not exist is skipped. Trust: the event's; a route's "trust: owner"
// upgrades it, except for an untrusted event an agent published (source
// "agent:<id>"), which no route makes trusted; a route's "trust: untrusted"
// lowers it.
std::vector<RouteTarget> routeEvent(const config::Home& home, const EventFacts& event);

// The session an untrusted run of `agent` uses: "<agent>~u".
std::string untrustedSession(const std::string& agent);
bool isUntrustedSession(const std::string& session);

struct RunPlan {
  bool accepted = true;
  std::string reason;  // why not, when refused
  std::string session;
  config::Trust trust = config::Trust::Untrusted;  // fail closed; planRun always sets it
};

// Where a run of `agent` with `trust` goes. Owner: the conversation asked for
// (the agent's id when none). Untrusted: refused when the agent has
// `untrusted: false`; otherwise always "<agent>~u", whatever was asked.
RunPlan planRun(const config::AgentConfig& agent, config::Trust trust, const std::string& conversation);

}  // namespace pine::policy
