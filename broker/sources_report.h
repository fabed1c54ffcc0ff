// What `pinectl sources` and GET /v1/sources show of every source: running or why not, who
// wants it, when it last looked and what it found, its last event, counts and errors. A pure
// function of the configuration and the facts the broker holds, so it is tested on its own.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "broker/store/rows.h"
#include "config/model.h"

namespace pine {

struct SourceFacts {
  std::set<std::string> running;                        // sources::SourceManager::running()
  std::set<std::string> starting;                       // of those, still on their first try
  std::map<std::string, std::string> notRunning;        // wanted but not running, with the reason
  std::map<std::string, std::string> channels;          // owner channels (telegram): source -> state
  std::vector<store::SubscriptionRow> subscriptions;
  std::map<std::string, store::SourceStatusRow> status;  // by source
};

// {"sources": [{"name", "type", "agent"?, "trust", "start", "state", "why"?, "wantedBy": [...],
//   "lastLookAt"?, "found"?, "lastEventAt"?, "events", "errors", "lastError"?, "lastErrorAt"?}]}
// state: "running", "not running" (with why), "idle" (nobody wants it: why says how to start it),
// "listening" (a webhook), or a channel's own state. Webhooks of `webhooks:` are listed too.
nlohmann::json sourcesReport(const config::Home& home, const SourceFacts& facts);

}  // namespace pine
