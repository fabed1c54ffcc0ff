#include <kj/debug.h>

#include "broker/broker.h"

#include <fcntl.h>
#include <unistd.h>

#include "broker/control_api.h"
#include "common/fd.h"
#include "common/log.h"

namespace pine {
namespace {

// The description alone, without the "remote exception: " capnp puts in front of a peer's error.
std::string describe(const kj::Exception& e) {
  std::string d = e.getDescription().cStr();
  const std::string remote = "remote exception: ";
  return d.rfind(remote, 0) == 0 ? d.substr(remote.size()) : d;
}

std::string readToken(const Home& home) {
  std::string t = readFile(home.token());
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  if (t.size() < 32) throw std::runtime_error(home.token() + " holds no usable token; delete it and restart pined");
  return t;
}

// An admin capability pined holds on the broker (proto/supervisor.capnp).
class AdminService final : public proto::BrokerAdmin::Server {
 public:
  explicit AdminService(Broker& broker) : broker_(broker) {}

 protected:
  kj::Promise<void> reload(ReloadContext) override {
    broker_.reload();
    return kj::READY_NOW;
  }
  kj::Promise<void> stop(StopContext) override {
    broker_.stop();
    return kj::READY_NOW;
  }

 private:
  Broker& broker_;
};

}  // namespace

struct Broker::Running {
  kj::Own<RpcLink> link;
  proto::WorkerProcess::Client process;
};

Broker::Broker(kj::AsyncIoContext& io, Home home)
    : io_(io),
      home_(std::move(home)),
      token_(readToken(home_)),
      supervisorLink_(kj::heap<RpcLink>(wrapSocket(*io.lowLevelProvider, 3), capnp::rpc::twoparty::Side::CLIENT,
                                        kj::heap<AdminService>(*this), LinkLimits{4, 1 << 20})),
      supervisor_(supervisorLink_->peer().castAs<proto::Supervisor>()),
      stopped_(nullptr),
      background_(*this) {
  auto paf = kj::newPromiseAndFulfiller<void>();
  stopFulfiller_ = kj::mv(paf.fulfiller);
  stopped_ = kj::mv(paf.promise);
}

Broker::~Broker() noexcept(false) {}

void Broker::taskFailed(kj::Exception&& e) { spdlog::warn("broker: {}", describe(e)); }

kj::Promise<void> Broker::run() {
  api_ = kj::heap<ControlApi>(io_, *this);
  api_->listenUnix(home_.socket());
  background_.add(supervisor_.readyRequest().send().ignoreResult());
  spdlog::info("broker {} ready; control API on unix:{}", getpid(), home_.socket());
  auto lost = supervisorLink_->onDisconnect().then([]() { spdlog::error("lost the link to pined: exiting"); },
                                                     [](kj::Exception&& e) {
                                                       spdlog::error("link to pined broke: {}", describe(e));
                                                     });
  return kj::mv(stopped_).exclusiveJoin(kj::mv(lost)).then([this]() {
    // Whatever is still running ends failed: nobody will hear its answer.
    std::vector<std::string> ids;
    for (auto& [id, r] : running_) ids.push_back(id);
    for (auto& id : ids) endTask(id, false, "the broker stopped");
    unlink(home_.socket().c_str());
  });
}

void Broker::reload() {
  reopenLogs();
  try {
    token_ = readToken(home_);
  } catch (std::exception& e) {
    spdlog::error("reload: {}; keeping the token in use", e.what());
  }
  spdlog::info("reloaded");
}

void Broker::stop() {
  spdlog::info("pined asked the broker to stop");
  if (stopFulfiller_->isWaiting()) stopFulfiller_->fulfill();
}

std::string Broker::startTask(const std::string& agent, const std::string& text) {
  TaskRecord& task = tasks_.create(agent, text, nowMs());
  std::string id = task.id;
  auto req = supervisor_.spawnWorkerRequest();
  auto spec = req.initSpec();
  spec.setTaskId(id);
  spec.setAgent(agent);
  auto supervision = req.send()
      .then(
          [this, id](capnp::Response<proto::Supervisor::SpawnWorkerResults>&& spawned) -> kj::Promise<void> {
            TaskRecord* t = tasks_.find(id);
            KJ_ASSERT(t != nullptr);
            return superviseTask(*t, spawned);
          },
          [this, id](kj::Exception&& e) { endTask(id, false, "pined could not start a worker: " + describe(e)); });
  background_.add(kj::mv(supervision));
  return id;
}

kj::Promise<const TaskRecord*> Broker::whenEnded(const std::string& id) {
  TaskRecord* t = tasks_.find(id);
  if (!t || t->ended()) return t;
  auto paf = kj::newPromiseAndFulfiller<void>();
  waiters_.emplace(id, kj::mv(paf.fulfiller));
  return paf.promise.then([this, id]() -> const TaskRecord* { return tasks_.find(id); });
}

kj::Promise<void> Broker::superviseTask(TaskRecord& task, proto::Supervisor::SpawnWorkerResults::Reader spawned) {
  std::string id = task.id;
  pid_t pid = spawned.getPid();
  std::string sandbox = spawned.getSandbox();
  auto process = spawned.getProcess();
  auto socket = spawned.getSocket();
  // `socket` owns the fd until we have our own copy: keep it alive until then.
  return socket.getFd().then([this, id, pid, sandbox, process, socket](kj::Maybe<int> fd) mutable -> kj::Promise<void> {
    TaskRecord* t = tasks_.find(id);
    KJ_ASSERT(t != nullptr);
    int mine = -1;
    KJ_IF_MAYBE(f, fd) { mine = fcntl(*f, F_DUPFD_CLOEXEC, 3); }
    if (mine < 0) {
      process.killRequest().send().detach([](kj::Exception&&) {});
      endTask(id, false, "pined handed over no socket for the worker");
      return kj::READY_NOW;
    }
    auto paf = kj::newPromiseAndFulfiller<WorkerOutcome>();
    auto link = kj::heap<RpcLink>(wrapSocket(*io_.lowLevelProvider, mine), capnp::rpc::twoparty::Side::SERVER,
                                  kj::heap<WorkerBroker>(TaskForWorker{t->id, t->agent, t->text, sandbox},
                                                         kj::mv(paf.fulfiller)),
                                  LinkLimits{0, 512 * 1024});
    tasks_.start(*t, pid, sandbox, nowMs());
    audit("task.start", {{"task", id}, {"agent", t->agent}, {"worker_pid", pid}, {"sandbox", sandbox}});
    if (sandbox == "none") spdlog::warn("task {} runs in a worker with sandbox: none (NOT confined)", id);

    auto describeExit = [](auto&& r) {
      auto exit = r.getExit();
      std::string how = exit.isSignal() ? "killed by signal " + std::to_string(exit.getSignal())
                                        : "exited with " + std::to_string(exit.getCode());
      return WorkerOutcome{false, "the worker ended before answering (" + how + ")"};
    };
    auto exited = process.waitRequest().send().then(describeExit);
    // A closed link usually means the worker is exiting: give it a moment so the task says how.
    auto gone = link->onDisconnect()
                    .then([]() { return std::string("the worker closed its link before answering"); },
                          [](kj::Exception&& e) { return "the worker's link broke: " + describe(e); })
                    .then([this, process, describeExit](std::string why) mutable {
                      auto grace = io_.provider->getTimer().afterDelay(500 * kj::MILLISECONDS).then([why]() {
                        return WorkerOutcome{false, why};
                      });
                      return process.waitRequest().send().then(describeExit).exclusiveJoin(kj::mv(grace));
                    });
    running_[id] = kj::heap<Running>(Running{kj::mv(link), process});
    return paf.promise.exclusiveJoin(kj::mv(exited))
        .exclusiveJoin(kj::mv(gone))
        .then([this, id](WorkerOutcome o) { endTask(id, o.done, o.text); });
  });
}

void Broker::endTask(const std::string& id, bool done, const std::string& text) {
  TaskRecord* t = tasks_.find(id);
  if (t && (done ? tasks_.finish(*t, text, nowMs()) : tasks_.fail(*t, text, nowMs()))) {
    nlohmann::json f = {{"task", id}, {"agent", t->agent}, {"state", toString(t->state)},
                        {"duration_ms", t->endedAtMs - t->createdAtMs}};
    if (!done) f["error"] = text;
    audit("task.end", f);
    if (done) spdlog::info("task {} done", id);
    else spdlog::warn("task {} failed: {}", id, text);
  }
  auto [first, last] = waiters_.equal_range(id);
  for (auto w = first; w != last; ++w) w->second->fulfill();
  waiters_.erase(first, last);
  auto it = running_.find(id);
  if (it != running_.end()) {
    auto running = kj::mv(it->second);
    running_.erase(it);
    // A worker that answered gets a moment to exit on its own, its link still open so that
    // it can close it first; then it is killed with all it started, and the link dropped.
    auto process = running->process;
    auto exited = process.waitRequest().send().ignoreResult();
    auto grace = io_.provider->getTimer().afterDelay(done ? 1 * kj::SECONDS : 0 * kj::SECONDS);
    background_.add(exited.exclusiveJoin(kj::mv(grace))
                        .then([process]() mutable { return process.killRequest().send().ignoreResult(); })
                        .catch_([](kj::Exception&&) {})
                        .attach(kj::mv(running)));
  }
}

nlohmann::json Broker::tasksJson(size_t limit) const {
  nlohmann::json list = nlohmann::json::array();
  for (auto* t : tasks_.recent(limit)) list.push_back(t->toJson());
  return list;
}

kj::Promise<nlohmann::json> Broker::status() {
  return supervisor_.statusRequest().send().then([this](auto&& r) {
    long long now = nowMs();
    nlohmann::json procs = nlohmann::json::array();
    for (auto p : r.getProcesses()) {
      nlohmann::json j = {{"role", p.getRole().cStr()},
                          {"pid", p.getPid()},
                          {"startedAt", isoTime(p.getStartedAtMs())},
                          {"uptimeSeconds", (now - p.getStartedAtMs()) / 1000.0},
                          {"restarts", p.getRestarts()}};
      if (p.getTaskId().size()) j["task"] = p.getTaskId().cStr();
      if (p.getAgent().size()) j["agent"] = p.getAgent().cStr();
      procs.push_back(j);
    }
    nlohmann::json active = nlohmann::json::array();
    for (auto* t : tasks_.active()) active.push_back(t->toJson());
    return nlohmann::json{{"home", home_.root},
                          {"processes", procs},
                          {"tasks", active},
                          {"api", {{"unix", home_.socket()}, {"http", nullptr}}}};
  });
}


kj::Promise<nlohmann::json> Broker::reloadConfig() {
  return supervisor_.reloadConfigRequest().send().then([](auto&& r) {
    nlohmann::json errors = nlohmann::json::array();
    for (auto e : r.getErrors()) errors.push_back(std::string(e.cStr()));
    return nlohmann::json{{"ok", errors.empty()}, {"errors", errors}};
  });
}

}  // namespace pine
