// The owner API's backend (api_backend.h): what each route of the control API reads or
// changes. The HTTP side and the owner checks are control_api's. Touches the task queue and
// its workers (list, submit, cancel), the sessions (reset, modes), the approvals desk, the
// store's events and state, the schedules, and pined (status, reload).
#pragma once
#include <kj/async.h>

#include <functional>
#include <memory>
#include <string>

#include "broker/api_backend.h"
#include "broker/approval_desk.h"
#include "broker/event_bus.h"
#include "broker/feed.h"
#include "broker/hook_intake.h"
#include "broker/schedule_timers.h"
#include "broker/sessions.h"
#include "broker/sources_report.h"
#include "broker/task_queue.h"
#include "proto/supervisor.capnp.h"

namespace pine {

class OwnerApi final : public ApiBackend {
 public:
  struct Parts {
    const Home& home;
    const std::string& token;  // the bearer token in force
    const std::shared_ptr<const config::Home>& config;
    store::Store& store;
    Feed& feed;
    EventBus& bus;
    TaskQueue& queue;
    Sessions& sessions;
    Approvals& approvals;
    ScheduleTimers& schedules;
    std::function<proto::Supervisor::Client()> supervisor;
    std::function<void()> reloadConfiguration;  // after pined validated a change
    // PUT /v1/state: stored and published as the owner's (the reply does not wait for the event).
    std::function<void(const std::string& key, const std::string& valueJson)> writeOwnerState;
    // The Telegram channels: their state for status, and an account the owner paired or denied.
    std::function<nlohmann::json()> channelStatus;
    std::function<void(const store::PairingRow&)> accountDecided;
    HookIntake* hooks = nullptr;  // POST /hooks/<name>; none: 404
    // Sources and subscriptions (owner_sources.cpp): the router's facts, and subscriptions the
    // owner adds or removes (the router starts and stops sources to match).
    std::function<SourceFacts()> sourceFacts;
    std::function<void(const store::SubscriptionRow&)> addSubscription;
    std::function<bool(const std::string& id)> removeSubscription;
    McpServers* mcp = nullptr;  // GET /v1/mcp, /v1/mcp/{server}/review (owner_mcp.cpp)
    // Once an ended task's worker is reaped and its checkpoint recorded (TaskRunner::settled).
    std::function<kj::Promise<void>(const std::string& task)> taskSettled;
  };
  explicit OwnerApi(Parts parts) : p_(std::move(parts)) {}

  const std::string& token() const override { return p_.token; }
  kj::Promise<ApiReply> status() override;
  kj::Promise<ApiReply> reload() override;
  ApiReply tasks(const ApiQuery& query) override;
  ApiReply task(const std::string& id) override;
  ApiReply listEvents(const ApiQuery& query) override;
  kj::Promise<ApiReply> publishEvent(const nlohmann::json& body) override;
  ApiReply agents() override;
  ApiReply sendMessage(const std::string& agent, const nlohmann::json& body) override;
  kj::Promise<ApiReply> taskResult(const std::string& taskId) override;
  ApiReply resetAgent(const std::string& agent, const nlohmann::json& body) override;
  ApiReply setMode(const std::string& agent, const nlohmann::json& body) override;
  ApiReply folder(const std::string& method, const std::string& agent, const ApiQuery& query,
                  const nlohmann::json& body) override;  // owner_folder.cpp
  ApiReply approvals(const ApiQuery& query) override;
  ApiReply approve(const std::string& id, bool always) override;
  ApiReply deny(const std::string& id) override;
  ApiReply cancelTask(const std::string& id) override;
  kj::Promise<ApiReply> taskChanges(const std::string& id, bool diff) override;  // owner_changes.cpp
  kj::Promise<ApiReply> undoTask(const std::string& id, bool force) override;
  ApiReply usage(const ApiQuery& query) override;  // owner_usage.cpp
  ApiReply schedules() override;
  ApiReply getState(const std::string& key) override;
  ApiReply putState(const std::string& key, const nlohmann::json& body) override;
  // owner_sources.cpp
  ApiReply sources() override;
  kj::Promise<ApiReply> mcpServers() override;                                  // owner_mcp.cpp
  kj::Promise<ApiReply> mcpReview(const std::string& server, bool accept) override;
  ApiReply subscriptions(const ApiQuery& query) override;
  ApiReply subscribe(const nlohmann::json& body) override;
  ApiReply unsubscribe(const std::string& id) override;
  // owner_pairings.cpp
  ApiReply telegramPairings() override;
  ApiReply telegramCode(const std::string& code) override;
  ApiReply decideTelegramCode(const std::string& code, bool pair) override;
  ApiReply removeTelegramPairing(const std::string& source, const std::string& account) override;
  Feed& feed() override { return p_.feed; }
  uint64_t hookBodyLimit(const std::string& name) override { return p_.hooks ? p_.hooks->bodyLimit(name) : 0; }
  kj::Promise<ApiReply> hook(const std::string& name, HookDelivery d) override {
    if (!p_.hooks) return ApiBackend::hook(name, kj::mv(d));
    return p_.hooks->deliver(name, kj::mv(d));
  }

 private:
  kj::Promise<void> settled(const std::string& task);  // owner_changes.cpp
  ApiReply answer(const std::string& id, bool approved, bool always);
  nlohmann::json taskJson(const store::TaskRow& r);
  ApiReply noAgent(const std::string& agent) const;  // 404 naming the agents that exist
  Parts p_;
};

}  // namespace pine
