#include "broker/broker.h"
#include "broker/command_start.h"
#include "broker/sources_report.h"

#include <algorithm>
#include <fcntl.h>

#include <kj/debug.h>
#include <unistd.h>

#include "broker/control_api.h"
#include "broker/owner_api.h"
#include "broker/program_start.h"
#include "broker/source_polls.h"
#include "broker/ftp_lists.h"
#include "broker/telegram/channels.h"
#include "broker/task_recovery.h"
#include "common/fd.h"
#include "common/log.h"
#include "config/load.h"

namespace pine {
namespace {

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
    broker_.reopen();
    return kj::READY_NOW;
  }
  kj::Promise<void> stop(StopContext) override {
    broker_.stop();
    return kj::READY_NOW;
  }
  kj::Promise<void> ownerConnection(OwnerConnectionContext context) override {
    auto socket = context.getParams().getSocket();
    return socket.getFd().then([this, socket](kj::Maybe<int> fd) mutable {
      KJ_IF_MAYBE(f, fd) {
        int mine = fcntl(*f, F_DUPFD_CLOEXEC, 3);
        if (mine >= 0) broker_.serveOwnerConnection(mine);
      }
    });
  }

 private:
  Broker& broker_;
};

}  // namespace

Broker::Broker(kj::AsyncIoContext& io, Home home, std::string bootId, std::string sandboxNote)
    : io_(io),
      home_(std::move(home)),
      bootId_(std::move(bootId)),
      sandboxNote_(std::move(sandboxNote)),
      token_(readToken(home_)),
      supervisorLink_(kj::heap<RpcLink>(wrapSocket(*io.lowLevelProvider, 3), capnp::rpc::twoparty::Side::CLIENT,
                                        kj::heap<AdminService>(*this), LinkLimits{4, 1 << 20})),
      supervisor_(supervisorLink_->peer().castAs<proto::Supervisor>()),
      stopped_(nullptr),
      background_(*this) {
  loadConfig();
  if (!config_) throw std::runtime_error("the configuration in " + home_.root + " does not load: run pinectl check");
  store_ = store::Store::open(home_.data() + "/pine.db");
  store_->checkpointInBackground();  // no commit (an acknowledged event) waits for a checkpoint
  auto& timer = io_.provider->getTimer();
  auto submitRun = [this](RunRequest r) { return queue_->submit(std::move(r)); };
  mcp_ = std::make_unique<McpServers>(timer, *store_, [this](const std::string& agent, const std::string& server) {
    return startMcpServer(*io_.lowLevelProvider, supervisor_, agent, server);
  });
  mcp_->runCommandsWith(agentCommandStarter(io_, supervisor_));
  approvals_ = std::make_unique<Approvals>(*store_, feed_, timer);
  sessions_ = std::make_unique<Sessions>(*store_, config_, [this](const std::string& agent, const std::string& text) {
    notifyOwner(agent, text, "", "bypassPaused");
  });
  router_ = std::make_unique<EventRouter>(*store_, config_, feed_, submitRun);
  // With the loop's timer: single events from concurrent senders share commits (event_bus.h).
  bus_ = std::make_unique<EventBus>(*store_, [this](const store::Event& e, EventText& text) { router_->deliver(e, text); }, &timer);
  queue_ = std::make_unique<TaskQueue>(*store_, home_, config_, *sessions_, *approvals_, feed_);
  runner_ = std::make_unique<TaskRunner>(io_, home_, config_, *this, *queue_, feed_, background_);
  queue_->setLauncher(*runner_);
  schedules_ = std::make_unique<ScheduleTimers>(timer, *store_, config_, submitRun, background_);
  // The hook's secret is pined's: the broker sends what arrived and hears yes or no.
  hooks_ = std::make_unique<HookIntake>(HookIntake::Parts{
      config_, *store_, *bus_,
      [this](const std::string& hook, const std::string& body, const std::string& presented,
             const std::string& timestamp) {
        auto req = supervisor_.checkHookRequest();
        req.setHook(hook);
        req.setBody(kj::arrayPtr(reinterpret_cast<const kj::byte*>(body.data()), body.size()));
        req.setPresented(presented);
        req.setTimestamp(timestamp);
        return req.send().then([](auto r) { return HookCheckResult{r.getOk(), r.getWhy().cStr()}; });
      },
      [] { return nowMs(); }});
  ownerApi_ = std::make_unique<OwnerApi>(OwnerApi::Parts{
      home_, token_, config_, *store_, feed_, *bus_, *queue_, *sessions_, *approvals_, *schedules_,
      [this]() { return supervisor_; }, [this]() { reloadConfiguration(); },
      [this](const std::string& key, const std::string& value) {
        background_.add(writeState(key, value, "owner", config::Trust::Owner).ignoreResult());
      },
      [this]() { return telegram_ ? telegram_->status() : nlohmann::json::array(); },
      [this](const store::PairingRow& row) {
        if (telegram_) telegram_->accountDecided(row);
      },
      hooks_.get(),
      [this]() {
        auto facts = router_->sourceFacts();
        if (telegram_)
          for (auto& ch : telegram_->status()) facts.channels[ch.value("source", "")] = ch.value("state", "");
        return facts;
      },
      [this](const store::SubscriptionRow& row) { router_->addSubscription(row); },
      [this](const std::string& id) { return router_->removeSubscription(id); }, mcp_.get(),
      [this](const std::string& task) { return runner_->settled(task); }});
  telegram_ = std::make_unique<telegram::Channels>(telegram::Channel::Parts{*this, *ownerApi_, feed_, timer, config_});
  auto paf = kj::newPromiseAndFulfiller<void>();
  stopFulfiller_ = kj::mv(paf.fulfiller);
  stopped_ = kj::mv(paf.promise);
}

Broker::~Broker() noexcept(false) {
  if (bus_) bus_->countReturning(nullptr);  // the control API it asks goes first
}

void Broker::taskFailed(kj::Exception&& e) { spdlog::warn("broker: {}", describeRemote(e)); }

void Broker::loadConfig() {
  // The broker never reads .env: pined validated the secret names before it started us.
  config::LoadOptions opts;
  opts.skipEnv = true;
  auto result = config::loadHome(home_.root, opts);
  if (!result.ok()) {
    spdlog::error("configuration not loaded; keeping the one in force:\n{}", result.formatErrors());
    return;
  }
  config_ = std::make_shared<const config::Home>(std::move(*result.home));
}

void Broker::serveOwnerConnection(int fd) {
  if (!api_) {
    close(fd);
    return;
  }
  api_->serveHandedOverConnection(fd);
}

kj::Promise<void> Broker::run() {
  // Grants, "always" answers and mode switches hold until pined restarts; a crash of the broker
  // alone keeps them, and its tasks resume (task_recovery.h).
  bool pinedRestarted = store_->beginBoot(bootId_.empty() ? "unknown-" + std::to_string(nowMs()) : bootId_, nowMs());
  audit("broker.boot", {{"pined_restarted", pinedRestarted}});
  recoverTasks(*store_, *approvals_, *queue_, *config_, pinedRestarted);

  api_ = kj::heap<ControlApi>(io_, *ownerApi_);
  bus_->countReturning([this]() { return api_->returningSenders(); });
  api_->serveHandedOver(home_.socket());  // pined listens on pine.sock and hands over checked peers
  int port = -1;
  std::vector<std::string> problems;  // said by pined on stderr at the start, and by `pinectl status`
  try {
    port = api_->listenTcp(config_->pine.http.host, config_->pine.http.port);
  } catch (kj::Exception& e) {
    std::string why = "the control API cannot listen on " + config_->pine.http.host + ":" +
                      std::to_string(config_->pine.http.port) + ": " + describeRemote(e) +
                      "; the unix socket still serves (change http.port in pine.yaml, or stop what uses the port)";
    spdlog::error("{}", why);
    api_->setTcpProblem(why);
    problems.push_back(why);
  }
  schedules_->armAll();
  telegram_->update();
  if (pinedRestarted && !sandboxNote_.empty()) telegram_->notice("sandboxDegraded", "pine: " + sandboxNote_);
  sources::Options sourceOptions;
  sourceOptions.http = httpSourceServices([this]() { return supervisor_; }, *store_, *bus_);
  sourceOptions.ftp = ftpSourceServices([this]() { return supervisor_; }, *store_, *bus_);
  sourceOptions.startCommand = commandStarter(io_, supervisor_);
  sourceOptions.startProgram = [this](const std::string& source) {
    return startSourceProgram(*io_.lowLevelProvider, supervisor_, source);
  };
  router_->startSources(
      io_,
      [this](store::Event e, std::function<void()> committed) {
        background_.add(bus_->publish(std::move(e)).then([committed = std::move(committed)](store::Event&&) {
          if (committed) committed();
        }));
      },
      [this](const config::Source& s) { return openMqttConnector(s.name); }, std::move(sourceOptions));
  purgeOld();
  background_.add(sayReady(std::move(problems), 30));
  spdlog::info("broker {} ready; control API on unix:{} and http://{}:{}", getpid(), home_.socket(),
               config_->pine.http.host, port);
  auto lost = supervisorLink_->onDisconnect().then([]() { spdlog::error("lost the link to pined: exiting"); },
                                                     [](kj::Exception&& e) {
                                                       spdlog::error("link to pined broke: {}", describeRemote(e));
                                                     });
  return kj::mv(stopped_).exclusiveJoin(kj::mv(lost)).then([this]() {
    // Whatever is still running ends failed: nobody will hear its answer.
    runner_->stopAll("the broker stopped");
    unlink(home_.socket().c_str());
  });
}

// Ready, with what could not be done: a source that did not start is said where the owner started
// pined, not only in `status`. A source still connecting is waited for, up to 3 s (every 100 ms).
kj::Promise<void> Broker::sayReady(std::vector<std::string> problems, int triesLeft) {
  auto facts = router_->sourceFacts();
  auto report = sourcesReport(*config_, facts)["sources"];
  bool starting = !facts.starting.empty() || std::any_of(report.begin(), report.end(), [](const nlohmann::json& e) {
    return e.value("state", "") == "starting" || (e.value("state", "") == "not running" && e.value("why", "").empty());
  });
  if (starting && triesLeft > 0)
    return io_.provider->getTimer().afterDelay(100 * kj::MILLISECONDS).then(
        [this, problems = std::move(problems), triesLeft]() mutable { return sayReady(std::move(problems), triesLeft - 1); });
  for (const auto& e : report)
    if (e.value("state", "") == "not running" && !e.value("why", "").empty()) {
      const std::string name = e.value("name", ""), why = e.value("why", "");
      problems.push_back(why.rfind("source '" + name + "'", 0) == 0 ? why : "source '" + name + "': " + why);
    }
  auto ready = supervisor_.readyRequest();
  auto list = ready.initProblems(problems.size());
  for (size_t i = 0; i < problems.size(); ++i) list.set(i, problems[i]);
  return ready.send().ignoreResult();
}

void Broker::reopen() {
  reopenLogs();
  try {
    token_ = readToken(home_);
  } catch (std::exception& e) {
    spdlog::error("reload: {}; keeping the token in use", e.what());
  }
  reloadConfiguration();
  spdlog::info("reloaded");
}

void Broker::reloadConfiguration() {
  loadConfig();
  schedules_->armAll();
  router_->updateSources();
  telegram_->update();
}

void Broker::stop() {
  spdlog::info("pined asked the broker to stop");
  if (stopFulfiller_->isWaiting()) stopFulfiller_->fulfill();
}

void Broker::progress(const std::string& taskId, const std::string& text) {
  feed_.publish({{"kind", "progress"}, {"task", taskId}, {"text", text}});
}

void Broker::notifyOwner(const std::string& agent, const std::string& text, const std::string& task,
                         const std::string& kind) {
  nlohmann::json n = {{"kind", "notice"}, {"notice", kind}, {"agent", agent}, {"text", text}};
  if (!task.empty()) n["task"] = task;
  feed_.publish(n);
  audit("owner.notice", {{"agent", agent}, {"task", task}, {"notice", kind}, {"text", text}});
  if (telegram_) telegram_->notice(kind, agent + ": " + text);
}

void Broker::recordUsage(const std::string& taskId, const store::Usage& usage) {
  queue_->recordUsage(taskId, usage);
}

kj::Promise<store::Event> Broker::writeState(const std::string& k, const std::string& valueJson, const std::string& by,
                                             config::Trust trust) {
  store_->putState({k, valueJson, nowMs(), by});
  store::Event e;
  e.topic = "state/" + k;
  e.source = by;
  e.origin = by;
  e.trust = trustName(trust);
  e.payload = valueJson;
  return bus_->publish(std::move(e));
}

kj::Promise<kj::Own<kj::AsyncCapabilityStream>> Broker::openMqttConnector(const std::string& source) {
  auto req = supervisor_.openMqttRequest();
  req.setSource(source);
  return req.send().then([this](auto r) {
    auto socket = r.getSession();
    // `socket` owns the fd until we have our own copy: keep it alive until then.
    return socket.getFd().then([this, socket](kj::Maybe<int> fd) mutable {
      int mine = -1;
      KJ_IF_MAYBE(f, fd) { mine = fcntl(*f, F_DUPFD_CLOEXEC, 3); }
      KJ_REQUIRE(mine >= 0, "pined sent no socket for the MQTT connector");
      return wrapSocket(*io_.lowLevelProvider, mine);
    });
  });
}

kj::Promise<std::optional<std::string>> Broker::publishToSource(const std::string& source, const std::string& topic,
                                                   const std::string& payload) {
  return router_->publishToSource(source, topic, payload);
}

void Broker::purgeOld() {
  long long cutoff = nowMs() - (long long)config_->pine.limits.eventRetentionDays * 86400000LL;
  try {
    auto n = store_->purgeOlderThan(cutoff);
    if (n.events || n.tasks || n.messages || n.approvals)
      audit("store.purge", {{"events", n.events}, {"tasks", n.tasks}, {"messages", n.messages}, {"approvals", n.approvals}});
  } catch (std::exception& e) {
    spdlog::error("retention: {}", e.what());
  }
  background_.add(io_.provider->getTimer().afterDelay(6 * kj::HOURS).then([this]() { purgeOld(); }));
}

}  // namespace pine
