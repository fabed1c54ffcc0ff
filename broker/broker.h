// pine-broker's state: its link to pined, the configuration it reads (never
// .env), the store, the event bus, runs and their workers, approvals,
// schedules, and the owner's control API. Unprivileged; holds no secrets.
#pragma once
#include <kj/async-io.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "broker/api_backend.h"
#include "broker/approvals.h"
#include "broker/event_bus.h"
#include "broker/feed.h"
#include "broker/policy/approvals.h"
#include "broker/policy/profile.h"
#include "broker/policy/routing.h"
#include "broker/policy/schedules.h"
#include "broker/policy/run_limits.h"
#include "broker/policy/setup_tools.h"
#include "broker/policy/taint.h"
#include "broker/policy/topics.h"
#include "broker/sources/source_manager.h"
#include "broker/store/store.h"
#include "broker/tasks.h"
#include "broker/worker_link.h"
#include "common/home.h"
#include "common/rpc_link.h"
#include "config/model.h"
#include "proto/supervisor.capnp.h"

namespace pine {

// "owner" or "untrusted", as the API, the audit log and the worker spell a trust.
inline const char* trustName(config::Trust t) { return t == config::Trust::Owner ? "owner" : "untrusted"; }

class ControlApi;
class Run;

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

class Broker final : public ApiBackend, private kj::TaskSet::ErrorHandler {
 public:
  Broker(kj::AsyncIoContext& io, Home home);
  ~Broker() noexcept(false);
  KJ_DISALLOW_COPY(Broker);

  // Runs until pined asks it to stop or its link to pined breaks.
  kj::Promise<void> run();
  void reopen();  // SIGHUP on pined: reopen logs, re-read the token and the configuration
  void reloadConfiguration();  // re-read the home's configuration (after pined validated a change)
  // Starts the sources someone wants (a subscription, a route, start: always) and stops the rest.
  void updateSources();
  // Subscriptions are read on every event: kept in memory, written through to the store.
  void addSubscription(const store::SubscriptionRow& row);
  // Publishes through a source's own channel (MQTT); an error text when refused.
  std::optional<std::string> publishToSource(const std::string& source, const std::string& topic,
                                             const std::string& payload);
  void stop();

  Submitted submit(RunRequest req);
  kj::Promise<const TaskRecord*> whenEnded(const std::string& id);
  kj::Promise<store::Event> publish(store::Event draft) { return bus_->publish(std::move(draft)); }

  // ---- ApiBackend ----------------------------------------------------------
  std::string token() const override { return token_; }
  kj::Promise<ApiReply> status() override;
  kj::Promise<ApiReply> reload() override;
  ApiReply tasks(const ApiQuery& query) override;
  ApiReply listEvents(const ApiQuery& query) override;
  kj::Promise<ApiReply> publishEvent(const nlohmann::json& body) override;
  ApiReply agents() override;
  ApiReply sendMessage(const std::string& agent, const nlohmann::json& body) override;
  kj::Promise<ApiReply> taskResult(const std::string& taskId) override;
  ApiReply resetAgent(const std::string& agent, const nlohmann::json& body) override;
  ApiReply setMode(const std::string& agent, const nlohmann::json& body) override;
  ApiReply approvals(const ApiQuery& query) override;
  ApiReply approve(const std::string& id, bool always) override;
  ApiReply deny(const std::string& id) override;
  ApiReply cancelTask(const std::string& id) override;
  ApiReply schedules() override;
  ApiReply getState(const std::string& key) override;
  ApiReply putState(const std::string& key, const nlohmann::json& body) override;
  Feed& feed() override { return feed_; }

  // ---- for runs ------------------------------------------------------------
  std::shared_ptr<const config::Home> config() const { return config_; }
  const Home& home() const { return home_; }
  store::Store& store() { return *store_; }
  Approvals& approvalsDesk() { return *approvals_; }
  kj::Timer& timer() { return io_.provider->getTimer(); }
  proto::Supervisor::Client& supervisor() { return supervisor_; }
  // A sub-agent's session ("<conversation>+subN") shares its conversation's taint and grants.
  static std::string conversationOf(const std::string& session);
  size_t runningSubagents(const std::string& agent, const std::string& conversation) const;
  policy::SessionFacts sessionFacts(const config::AgentConfig& agent, const std::string& session, bool untrustedRun);
  void markTainted(const std::string& agent, const std::string& session, const std::string& reason);
  bool sessionTainted(const std::string& agent, const std::string& session);
  // A state key written (by the owner or a run): stored, and a state/<key> event published.
  kj::Promise<store::Event> writeState(const std::string& key, const std::string& valueJson, const std::string& by,
                                       config::Trust trust);
  void notifyOwner(const std::string& agent, const std::string& text, const std::string& task);

 private:
  struct Live;
  void loadConfig();
  void launch(const std::string& taskId);
  void startNextInSession(const std::string& agent, const std::string& session);
  kj::Promise<void> superviseTask(const std::string& id, proto::Supervisor::SpawnWorkerResults::Reader spawned);
  void endTask(const std::string& id, bool done, const std::string& text, const WorkerOutcome* outcome = nullptr);
  bool queuedTask(const std::string& id) const;  // waiting in its session's queue
  void persist(const TaskRecord& t);
  void deliver(const store::Event& e);
  void deliverToSubscriptions(const store::Event& e);
  void armSchedules();
  void armSchedule(const config::Schedule& s);
  void purgeOld();
  void taskFailed(kj::Exception&& e) override;

  kj::AsyncIoContext& io_;
  Home home_;
  std::string token_;
  std::shared_ptr<const config::Home> config_;
  std::unique_ptr<store::Store> store_;
  Feed feed_;
  std::unique_ptr<EventBus> bus_;
  std::unique_ptr<Approvals> approvals_;
  std::unique_ptr<sources::SourceManager> sources_;
  std::vector<store::SubscriptionRow> subscriptions_;
  TaskTable tasks_;
  std::map<std::string, RunRequest> requests_;        // task id -> what started it (until it ends)
  std::map<std::string, std::deque<std::string>> sessionQueue_;  // "agent/session" -> queued task ids
  std::set<std::string> busySessions_;
  std::set<std::string> cancelRequested_;  // cancelled while pined was starting their worker
  std::map<std::string, config::Mode> modeOverrides_; // pinectl mode: until the daemon restarts
  kj::Own<RpcLink> supervisorLink_;
  proto::Supervisor::Client supervisor_;
  std::map<std::string, kj::Own<Live>> running_;
  std::multimap<std::string, kj::Own<kj::PromiseFulfiller<void>>> waiters_;
  kj::Own<ControlApi> api_;
  kj::Own<kj::PromiseFulfiller<void>> stopFulfiller_;
  kj::Promise<void> stopped_;
  long long startedMs_ = 0;
  unsigned scheduleGeneration_ = 0;
  kj::TaskSet background_;
};

}  // namespace pine
