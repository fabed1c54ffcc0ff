// pine-broker's state: its link to pined, the tasks and their workers, and the
// owner's control API. Unprivileged; holds no secrets.
#pragma once
#include <kj/async-io.h>

#include <map>
#include <nlohmann/json.hpp>

#include "broker/tasks.h"
#include "broker/worker_link.h"
#include "common/home.h"
#include "common/rpc_link.h"
#include "proto/supervisor.capnp.h"

namespace pine {

class ControlApi;

class Broker : private kj::TaskSet::ErrorHandler {
 public:
  Broker(kj::AsyncIoContext& io, Home home);
  ~Broker() noexcept(false);
  KJ_DISALLOW_COPY(Broker);

  // Runs until pined asks it to stop or its link to pined breaks.
  kj::Promise<void> run();

  // Starts a task for `agent` and returns its id; it runs whether or not anyone waits for it.
  std::string startTask(const std::string& agent, const std::string& text);
  // Resolves once the task has ended (done or failed); nullptr for an unknown task.
  kj::Promise<const TaskRecord*> whenEnded(const std::string& id);
  kj::Promise<nlohmann::json> status();
  // Asks pined to re-read the configuration: {"ok": bool, "errors": [...]}.
  kj::Promise<nlohmann::json> reloadConfig();
  nlohmann::json tasksJson(size_t limit) const;
  const Home& home() const { return home_; }
  std::string token() const { return token_; }
  void reload();
  void stop();

 private:
  struct Running;
  kj::Promise<void> superviseTask(TaskRecord& task, proto::Supervisor::SpawnWorkerResults::Reader spawned);
  void endTask(const std::string& id, bool done, const std::string& text);
  void taskFailed(kj::Exception&& e) override;

  kj::AsyncIoContext& io_;
  Home home_;
  std::string token_;
  TaskTable tasks_;
  kj::Own<RpcLink> supervisorLink_;
  proto::Supervisor::Client supervisor_;
  std::map<std::string, kj::Own<Running>> running_;
  std::multimap<std::string, kj::Own<kj::PromiseFulfiller<void>>> waiters_;
  kj::Own<ControlApi> api_;
  kj::Own<kj::PromiseFulfiller<void>> stopFulfiller_;
  kj::Promise<void> stopped_;
  kj::TaskSet background_;
};

}  // namespace pine
