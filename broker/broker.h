// pine-broker's wiring: its link to pined, the configuration it reads (never .env), the
// store, and the parts that do the work, each in a file of its own (README.md says which).
// It implements RunServices for the runs and answers pined's admin calls. Unprivileged;
// holds no secrets.
#pragma once
#include <kj/async-io.h>

#include <memory>
#include <string>

#include "broker/approval_desk.h"
#include "broker/event_bus.h"
#include "broker/event_routing.h"
#include "broker/feed.h"
#include "broker/hook_intake.h"
#include "broker/mcp_servers.h"
#include "broker/run_services.h"
#include "broker/schedule_timers.h"
#include "broker/sessions.h"
#include "broker/store/store.h"
#include "broker/task_queue.h"
#include "broker/task_runner.h"
#include "common/home.h"
#include "common/rpc_link.h"
#include "config/model.h"
#include "proto/supervisor.capnp.h"

namespace pine {

class ControlApi;
namespace telegram {
class Channels;
}
class OwnerApi;

class Broker final : public RunServices, private kj::TaskSet::ErrorHandler {
 public:
  // bootId: pined's name for its current start (--boot-id); "" counts as a fresh start.
  // sandboxNote: pined's word that the sandbox is degraded or unusable (--sandbox-note), told to
  // the owner's channels once per start of pined.
  Broker(kj::AsyncIoContext& io, Home home, std::string bootId = "", std::string sandboxNote = "");
  ~Broker() noexcept(false);
  KJ_DISALLOW_COPY(Broker);

  // Runs until pined asks it to stop or its link to pined breaks.
  kj::Promise<void> run();
  void reopen();  // SIGHUP on pined: reopen logs, re-read the token and the configuration
  void stop();
  // A pine.sock connection pined accepted and checked (BrokerAdmin.ownerConnection): ours to serve.
  void serveOwnerConnection(int fd);

  // ---- RunServices -----------------------------------------------------------
  const Home& home() const override { return home_; }
  store::Store& store() override { return *store_; }
  Sessions& sessions() override { return *sessions_; }
  Approvals& approvals() override { return *approvals_; }
  void progress(const std::string& taskId, const std::string& text) override;
  void notifyOwner(const std::string& agent, const std::string& text, const std::string& taskId,
                   const std::string& kind) override;
  void recordUsage(const std::string& taskId, const store::Usage& usage) override;
  kj::Promise<store::Event> publish(store::Event draft) override { return bus_->publish(std::move(draft)); }
  kj::Promise<store::Event> writeState(const std::string& key, const std::string& valueJson, const std::string& by,
                                       config::Trust trust) override;
  kj::Promise<std::optional<std::string>> publishToSource(const std::string& source, const std::string& topic,
                                                          const std::string& payload) override;
  void addSubscription(const store::SubscriptionRow& row) override { router_->addSubscription(row); }
  void reloadConfiguration() override;  // re-read the home's configuration (after pined validated a change)
  Submitted submit(RunRequest request) override { return queue_->submit(std::move(request)); }
  kj::Promise<std::optional<TaskRecord>> whenEnded(const std::string& taskId) override {
    return queue_->whenEnded(taskId);
  }
  size_t runningSubagents(const std::string& agent, const std::string& conversation) override {
    return queue_->runningSubagents(agent, conversation);
  }
  proto::Supervisor::Client supervisor() override { return supervisor_; }
  McpServers* mcp() override { return mcp_.get(); }

 private:
  kj::Promise<void> sayReady(std::vector<std::string> problems, int triesLeft);
  void loadConfig();
  void purgeOld();
  // A source's MQTT connector, started by pined with the source's login (openMqtt): our end of it.
  kj::Promise<kj::Own<kj::AsyncCapabilityStream>> openMqttConnector(const std::string& source);
  void taskFailed(kj::Exception&& e) override;

  kj::AsyncIoContext& io_;
  Home home_;
  std::string bootId_;
  std::string sandboxNote_;
  std::string token_;
  std::shared_ptr<const config::Home> config_;  // the parts read it through a reference: reloads reach them
  kj::Own<RpcLink> supervisorLink_;
  proto::Supervisor::Client supervisor_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<McpServers> mcp_;  // before the runs and the API that use it: destroyed after them
  Feed feed_;
  std::unique_ptr<Approvals> approvals_;
  std::unique_ptr<Sessions> sessions_;
  std::unique_ptr<EventRouter> router_;
  std::unique_ptr<EventBus> bus_;
  std::unique_ptr<TaskQueue> queue_;
  std::unique_ptr<TaskRunner> runner_;
  std::unique_ptr<ScheduleTimers> schedules_;
  std::unique_ptr<HookIntake> hooks_;
  std::unique_ptr<OwnerApi> ownerApi_;
  std::unique_ptr<telegram::Channels> telegram_;
  kj::Own<ControlApi> api_;
  kj::Own<kj::PromiseFulfiller<void>> stopFulfiller_;
  kj::Promise<void> stopped_;
  kj::TaskSet background_;  // last: destroyed first, before the parts its promises point at
};

}  // namespace pine
