// What a run asks of the broker, and nothing more: the one interface `Run` (run.h) and its
// parts depend on, so that run.cpp does not include broker.h. The broker implements it
// (broker.cpp); tests/broker/ implements a fake over a real store to test the approval flow
// without processes. Also what starts a run (RunRequest) and what submitting one answers.
#pragma once
#include <kj/async.h>

#include <optional>
#include <string>
#include <vector>

#include "broker/store/store.h"
#include "broker/tasks.h"
#include "common/home.h"
#include "config/model.h"
#include "proto/supervisor.capnp.h"

namespace pine {

class Approvals;
class McpServers;
class Sessions;

// "owner" or "untrusted", as the API, the audit log and the worker spell a trust.
inline const char* trustName(config::Trust t) { return t == config::Trust::Owner ? "owner" : "untrusted"; }

// What starts a run: the owner, an event through a route or a subscription, a
// schedule, or another run (delegation, sub-agents).
struct RunRequest {
  std::string agent, session, text;
  config::Trust trust = config::Trust::Owner;
  std::string origin;       // "owner", "route:NAME", "subscription:ID", "schedule:NAME", "delegate:TASK", ...
  std::string parentTask;   // delegation and sub-agents
  std::vector<std::string> chain;  // agents from the first run down to this one (delegation loops)
  int depth = 0;
  std::string eventId;
  int hops = 0;
  bool separate = false;    // a subscription with separate: true: the reduced tool set
  bool subagent = false;
  bool taintsSession = false;  // the text is outside content delivered into the conversation
};

struct Submitted {
  std::string taskId;  // empty when refused
  std::string session;
  std::string error;   // why it was refused
  int status = 200;
};

class RunServices {
 public:
  virtual ~RunServices() noexcept(false) = default;

  virtual const Home& home() const = 0;
  virtual store::Store& store() = 0;
  virtual Sessions& sessions() = 0;    // taint, grants, "always" answers, the facts rules decide by
  virtual Approvals& approvals() = 0;  // the desk the owner answers at

  // A live note for the owner's screens ({"kind":"progress"}).
  virtual void progress(const std::string& taskId, const std::string& text) = 0;
  // A message for the owner; audited. kind: send (the send tool), approval (one waits; Telegram
  // shows the approval itself), budget, bypassPaused. Telegram passes on the kinds its source
  // is set to (config::kTelegramNotices).
  virtual void notifyOwner(const std::string& agent, const std::string& text, const std::string& taskId,
                           const std::string& kind) = 0;
  // Model usage as it happens: added to the task's stored usage, so a crash loses none.
  virtual void recordUsage(const std::string& taskId, const store::Usage& usage) = 0;

  // Events and state (broker_tools): committed before the promise resolves.
  virtual kj::Promise<store::Event> publish(store::Event draft) = 0;
  virtual kj::Promise<store::Event> writeState(const std::string& key, const std::string& valueJson,
                                               const std::string& by, config::Trust trust) = 0;
  // Through a source's own channel (MQTT): an error text when refused.
  virtual kj::Promise<std::optional<std::string>> publishToSource(const std::string& source,
                                                                  const std::string& topic,
                                                                  const std::string& payload) = 0;
  virtual void addSubscription(const store::SubscriptionRow& row) = 0;
  // After pined wrote a configuration change the run asked for.
  virtual void reloadConfiguration() = 0;

  // Delegation and sub-agents: a run of its own, and its end (nullopt: no such task).
  virtual Submitted submit(RunRequest request) = 0;
  virtual kj::Promise<std::optional<TaskRecord>> whenEnded(const std::string& taskId) = 0;
  virtual size_t runningSubagents(const std::string& agent, const std::string& conversation) = 0;

  // pined: model calls (egress), downloads, configuration writes.
  virtual proto::Supervisor::Client supervisor() = 0;
  // The sessions with the agents' MCP servers (mcp_servers.h); none: runs get no MCP tools.
  virtual McpServers* mcp() { return nullptr; }
};

}  // namespace pine
