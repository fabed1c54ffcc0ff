#include "broker/broker.h"

#include <fcntl.h>
#include <kj/debug.h>
#include <unistd.h>

#include "broker/control_api.h"
#include "broker/run.h"
#include "broker/schedule/describe.h"
#include "broker/schedule/next_run.h"
#include "broker/skills.h"
#include "common/fd.h"
#include "common/link_stream.h"
#include "common/log.h"
#include "common/names.h"
#include "config/load.h"
#include "worker/tools/outside_text.h"

namespace pine {
namespace {

std::string readToken(const Home& home) {
  std::string t = readFile(home.token());
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  if (t.size() < 32) throw std::runtime_error(home.token() + " holds no usable token; delete it and restart pined");
  return t;
}

std::string key(const std::string& agent, const std::string& session) { return agent + "/" + session; }


std::string readIfExists(const std::string& path) {
  try {
    return readFile(path);
  } catch (std::exception&) {
    return "";
  }
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

 private:
  Broker& broker_;
};

}  // namespace

struct Broker::Live {
  // Declared first, destroyed last: the link goes (cancelling the worker's calls in flight) before
  // the Run those calls point at.
  std::unique_ptr<Run> run;
  kj::Own<RpcLink> link;
  proto::WorkerProcess::Client process = nullptr;
  kj::Own<kj::PromiseFulfiller<WorkerOutcome>> cancel;  // the owner's cancellation ends the run
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
  loadConfig();
  if (!config_) throw std::runtime_error("the configuration in " + home_.root + " does not load: run pinectl check");
  store_ = store::Store::open(home_.data() + "/pine.db");
  bus_ = std::make_unique<EventBus>(*store_, [this](const store::Event& e) { deliver(e); });
  approvals_ = std::make_unique<Approvals>(*store_, feed_, io_.provider->getTimer());
  auto paf = kj::newPromiseAndFulfiller<void>();
  stopFulfiller_ = kj::mv(paf.fulfiller);
  stopped_ = kj::mv(paf.promise);
  startedMs_ = nowMs();
}

Broker::~Broker() noexcept(false) {}

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

kj::Promise<void> Broker::run() {
  // What a crash left behind: runs that cannot continue, approvals whose time ran out.
  for (auto& t : store_->unfinishedTasks()) {
    t.state = "failed";
    t.error = "the broker restarted while this task was " + t.state;
    t.endedMs = nowMs();
    store_->putTask(t);
  }
  approvals_->expireOverdue();
  // Grants and "always" answers hold until a reset or a restart: a restarted broker asks again.
  store_->removeAllGrants();
  subscriptions_ = store_->subscriptions();

  api_ = kj::heap<ControlApi>(io_, *this);
  api_->listenUnix(home_.socket());
  int port = -1;
  try {
    port = api_->listenTcp(config_->pine.http.host, config_->pine.http.port);
  } catch (kj::Exception& e) {
    spdlog::error("control API: cannot listen on {}:{}: {}; the unix socket still serves",
                  config_->pine.http.host, config_->pine.http.port, describeRemote(e));
  }
  armSchedules();
  // What a source hears is an event like any other: committed, then routed and delivered.
  sources_ = std::make_unique<sources::SourceManager>(io_, [this](sources::Draft d) {
    store::Event e;
    e.topic = d.topic;
    e.source = d.source;
    e.origin = "source:" + d.source;
    e.trust = d.trust;
    e.payload = d.payload;
    background_.add(bus_->publish(std::move(e)).ignoreResult());
  });
  updateSources();
  purgeOld();
  background_.add(supervisor_.readyRequest().send().ignoreResult());
  spdlog::info("broker {} ready; control API on unix:{} and http://{}:{}", getpid(), home_.socket(),
               config_->pine.http.host, port);
  auto lost = supervisorLink_->onDisconnect().then([]() { spdlog::error("lost the link to pined: exiting"); },
                                                     [](kj::Exception&& e) {
                                                       spdlog::error("link to pined broke: {}", describeRemote(e));
                                                     });
  return kj::mv(stopped_).exclusiveJoin(kj::mv(lost)).then([this]() {
    // Whatever is still running ends failed: nobody will hear its answer.
    std::vector<std::string> ids;
    for (auto& [id, r] : running_) ids.push_back(id);
    for (auto& id : ids) endTask(id, false, "the broker stopped");
    unlink(home_.socket().c_str());
  });
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
  armSchedules();
  updateSources();
}

void Broker::updateSources() {
  if (!sources_) return;
  std::set<std::string> subscribed;
  for (auto& s : subscriptions_) subscribed.insert(s.source);
  sources_->update(sources::wantedSources(*config_, subscribed));
  for (auto& [name, why] : sources_->notRunning()) spdlog::warn("source {} is wanted but not running: {}", name, why);
}

std::optional<std::string> Broker::publishToSource(const std::string& source, const std::string& topic,
                                                   const std::string& payload) {
  if (!sources_) return std::string("sources are not running");
  return sources_->publish(source, topic, payload);
}

void Broker::stop() {
  spdlog::info("pined asked the broker to stop");
  if (stopFulfiller_->isWaiting()) stopFulfiller_->fulfill();
}

// ---- sessions ----------------------------------------------------------------

std::string Broker::conversationOf(const std::string& session) {
  auto p = session.find("+sub");
  return p == std::string::npos ? session : session.substr(0, p);
}

size_t Broker::runningSubagents(const std::string& agent, const std::string& conversation) const {
  size_t n = 0;
  for (auto& [id, r] : requests_)
    if (r.subagent && r.agent == agent && conversationOf(r.session) == conversation) ++n;
  return n;
}

policy::SessionFacts Broker::sessionFacts(const config::AgentConfig& agent, const std::string& sessionName,
                                          bool untrustedRun) {
  const std::string session = conversationOf(sessionName);
  policy::SessionFacts f;
  f.configuredMode = config_->effectiveMode(agent);
  auto o = modeOverrides_.find(agent.id);
  if (o != modeOverrides_.end()) f.modeOverride = o->second;
  auto row = store_->session(agent.id, session);
  f.tainted = row && row->tainted;
  f.bypassAnyway = row && row->bypassAnyway;
  f.untrustedRun = untrustedRun;
  f.bypassWhenTainted = config_->pine.security.bypassWhenTainted;
  f.shellNetwork = agent.sandbox.network;
  f.mainConversation = session == "main";
  for (auto& g : store_->grants(agent.id, session)) {
    if (g.kind == "always") f.always.push_back({g.value, g.whileTainted});
    if (g.kind == "network") {
      f.shellNetwork = g.value == "all" ? config::Network::All
                       : f.shellNetwork == config::Network::All ? config::Network::All
                                                                : config::Network::Localhost;
      if (g.whileTainted) f.networkGrantedWhileTainted = true;
    }
  }
  return f;
}

bool Broker::sessionTainted(const std::string& agent, const std::string& sessionName) {
  auto row = store_->session(agent, conversationOf(sessionName));
  return row && row->tainted;
}

void Broker::markTainted(const std::string& agent, const std::string& sessionName, const std::string& reason) {
  const std::string session = conversationOf(sessionName);
  if (config_->pine.security.taint == config::TaintPolicy::Off && session.find("~u") == std::string::npos) return;
  auto row = store_->session(agent, session);
  store::SessionRow s;
  if (row) s = *row;
  s.agent = agent;
  s.session = session;
  if (s.tainted) return;
  s.tainted = true;
  s.taintReason = reason;
  if (!s.createdMs) s.createdMs = nowMs();
  s.updatedMs = nowMs();
  store_->putSession(s);
  audit("session.taint", {{"agent", agent}, {"session", session}, {"reason", reason}});
  bool paused = config_->effectiveMode(config_->agents.at(agent)) == config::Mode::Bypass &&
                !config_->pine.security.bypassWhenTainted && !s.bypassAnyway;
  auto o = modeOverrides_.find(agent);
  if (o != modeOverrides_.end()) paused = o->second == config::Mode::Bypass && !config_->pine.security.bypassWhenTainted && !s.bypassAnyway;
  if (paused) notifyOwner(agent, "bypass is paused in session " + session + ": it has read outside content (" + reason +
                                     "). It behaves like auto until you reset it.", "");
}

void Broker::notifyOwner(const std::string& agent, const std::string& text, const std::string& task) {
  nlohmann::json n = {{"kind", "notice"}, {"agent", agent}, {"text", text}};
  if (!task.empty()) n["task"] = task;
  feed_.publish(n);
  audit("owner.notice", {{"agent", agent}, {"task", task}, {"text", text}});
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

// ---- runs --------------------------------------------------------------------

Submitted Broker::submit(RunRequest req) {
  auto cfg = config_;
  auto it = cfg->agents.find(req.agent);
  if (it == cfg->agents.end())
    return {"", "", "no agent '" + req.agent + "': create " + home_.agents() + "/" + req.agent + "/agent.yaml", 404};
  const auto& agent = it->second;
  auto plan = policy::planRun(agent, req.trust, req.session.empty() ? "main" : req.session);
  if (!plan.accepted) {
    audit("task.refused", {{"agent", req.agent}, {"origin", req.origin}, {"reason", plan.reason}});
    return {"", "", plan.reason, 403};
  }
  if (req.trust == config::Trust::Untrusted && req.session.rfind(req.agent + "~u", 0) == 0) plan.session = req.session;
  req.session = plan.session;
  size_t queued = 0;
  for (auto* t : tasks_.active())
    if (t->agent == req.agent) ++queued;
  if (auto why = policy::checkQueue(queued, cfg->pine.limits.queuePerAgent)) {
    audit("task.refused", {{"agent", req.agent}, {"origin", req.origin}, {"reason", *why}});
    return {"", "", *why, 429};
  }
  if (req.trust == config::Trust::Untrusted) req.text = policy::clipUntrustedPrompt(req.text, cfg->pine.limits.untrustedPromptMaxBytes);
  TaskRecord& t = tasks_.create(req.agent, req.text, nowMs());
  t.session = req.session;
  t.trust = trustName(req.trust);
  t.origin = req.origin;
  t.parent = req.parentTask;
  t.depth = req.depth;
  std::string id = t.id;
  persist(t);
  // Runs that outside content started are restricted from their first step.
  if (req.trust == config::Trust::Untrusted) markTainted(req.agent, req.session, "started by outside content (" + req.origin + ")");
  if (req.taintsSession) markTainted(req.agent, req.session, "an event of a subscribed source arrived (" + req.origin + ")");
  audit("task.queued", {{"task", id}, {"agent", req.agent}, {"session", req.session}, {"trust", t.trust}, {"origin", req.origin}});
  feed_.publish({{"kind", "task"}, {"task", id}, {"agent", req.agent}, {"session", req.session}, {"state", "queued"}});
  std::string k = key(req.agent, req.session);
  requests_[id] = std::move(req);
  sessionQueue_[k].push_back(id);
  if (!busySessions_.count(k)) startNextInSession(t.agent, t.session);
  return {id, t.session, "", 200};
}

// The owner stops a task (POST /v1/tasks/{id}/cancel, pinectl cancel).
ApiReply Broker::cancelTask(const std::string& id) {
  TaskRecord* t = tasks_.find(id);
  if (!t) return apiError(404, "no task '" + id + "'");
  if (t->ended()) return apiError(409, "task " + id + " has already ended (" + toString(t->state) + ")");
  audit("task.cancel", {{"task", id}, {"agent", t->agent}, {"session", t->session}, {"by", "owner"}});
  auto it = running_.find(id);
  if (it != running_.end() && it->second->cancel) {
    // Its worker is killed with all it started once the run ends (endTask).
    if (it->second->cancel->isWaiting()) it->second->cancel->fulfill(WorkerOutcome{false, kCancelledByOwner});
  } else if (it != running_.end() || !queuedTask(id)) {
    cancelRequested_.insert(id);  // pined is starting its worker: ended as soon as it is up
  } else {
    endTask(id, false, kCancelledByOwner);  // still queued: it never runs
  }
  return {200, {{"task", id}, {"cancelled", true}}};
}

bool Broker::queuedTask(const std::string& id) const {
  for (auto& [k, q] : sessionQueue_)
    if (std::find(q.begin(), q.end(), id) != q.end()) return true;
  return false;
}

void Broker::startNextInSession(const std::string& agent, const std::string& session) {
  std::string k = key(agent, session);
  auto& q = sessionQueue_[k];
  while (!q.empty()) {
    std::string id = q.front();
    q.pop_front();
    TaskRecord* t = tasks_.find(id);
    if (!t || t->ended()) continue;
    busySessions_.insert(k);
    launch(id);
    return;
  }
  busySessions_.erase(k);
  sessionQueue_.erase(k);
}

void Broker::persist(const TaskRecord& t) {
  store::TaskRow r;
  r.id = t.id;
  r.agent = t.agent;
  r.session = t.session;
  r.text = t.text;
  r.trust = t.trust;
  r.state = toString(t.state);
  r.answer = t.answer;
  r.error = t.error;
  r.parent = t.parent;
  r.depth = t.depth;
  r.createdMs = t.createdAtMs;
  r.startedMs = t.startedAtMs;
  r.endedMs = t.endedAtMs;
  r.tokensIn = t.tokensIn;
  r.tokensOut = t.tokensOut;
  r.cost = t.cost;
  try {
    store_->putTask(r);
  } catch (std::exception& e) {
    spdlog::error("task {}: not stored: {}", t.id, e.what());
  }
}

void Broker::launch(const std::string& id) {
  TaskRecord* t = tasks_.find(id);
  KJ_ASSERT(t != nullptr);
  const RunRequest& req = requests_.at(id);
  auto cfg = config_;
  const auto& agent = cfg->agents.at(req.agent);
  policy::RunContext ctx;
  ctx.trust = req.trust;
  ctx.subagent = req.subagent;
  ctx.separateSubscription = req.separate;
  auto tools = policy::toolsForRun(*cfg, agent, ctx);
  bool tainted = sessionTainted(req.agent, req.session);

  auto spawn = supervisor_.spawnWorkerRequest();
  auto spec = spawn.initSpec();
  spec.setTaskId(id);
  spec.setAgent(req.agent);
  spec.setTainted(tainted);
  spec.setUntrusted(req.trust == config::Trust::Untrusted);
  // What the owner granted this conversation (request_access); pined re-checks every path.
  std::vector<std::string> reads, writes;
  std::string network = "none";
  if (req.trust == config::Trust::Owner) {
    for (auto& g : store_->grants(req.agent, conversationOf(req.session))) {
      if (g.kind == "read") reads.push_back(g.value);
      if (g.kind == "write") writes.push_back(g.value);
      if (g.kind == "network") network = g.value;
    }
  }
  auto grants = spec.initGrants();
  auto r = grants.initRead(std::min<size_t>(reads.size(), 64));
  for (size_t i = 0; i < r.size(); ++i) r.set(i, reads[i]);
  auto w = grants.initWrite(std::min<size_t>(writes.size(), 64));
  for (size_t i = 0; i < w.size(); ++i) w.set(i, writes[i]);
  grants.setNetwork(network);

  auto run = std::make_unique<Run>(*this, id, req, cfg, tools);
  run->setSandboxTainted(tainted || req.trust == config::Trust::Untrusted);
  auto supervision =
      spawn.send()
          .then(
              [this, id, run = kj::mv(run)](capnp::Response<proto::Supervisor::SpawnWorkerResults>&& spawned) mutable
              -> kj::Promise<void> {
                auto live = kj::heap<Live>();
                live->run = std::move(run);
                running_[id] = kj::mv(live);
                return superviseTask(id, spawned);
              },
              [this, id](kj::Exception&& e) { endTask(id, false, "pined could not start a worker: " + describeRemote(e)); });
  background_.add(kj::mv(supervision));
}

kj::Promise<void> Broker::superviseTask(const std::string& id, proto::Supervisor::SpawnWorkerResults::Reader spawned) {
  pid_t pid = spawned.getPid();
  std::string sandbox = spawned.getSandbox();
  auto process = spawned.getProcess();
  auto socket = spawned.getSocket();
  running_[id]->process = process;
  // `socket` owns the fd until we have our own copy: keep it alive until then.
  return socket.getFd().then([this, id, pid, sandbox, process, socket](kj::Maybe<int> fd) mutable -> kj::Promise<void> {
    TaskRecord* t = tasks_.find(id);
    auto liveIt = running_.find(id);
    KJ_ASSERT(t != nullptr && liveIt != running_.end());
    Live& live = *liveIt->second;
    int mine = -1;
    KJ_IF_MAYBE(f, fd) { mine = fcntl(*f, F_DUPFD_CLOEXEC, 3); }
    if (mine < 0) {
      process.killRequest().send().detach([](kj::Exception&&) {});
      endTask(id, false, "pined handed over no socket for the worker");
      return kj::READY_NOW;
    }
    const RunRequest& req = requests_.at(id);
    auto cfg = config_;
    const auto& agent = cfg->agents.at(req.agent);
    TaskForWorker info{t->id, t->agent, t->text, sandbox};
    info.session = req.session;
    info.trust = trustName(req.trust);
    info.tainted = sessionTainted(req.agent, req.session);
    nlohmann::json history = nlohmann::json::array();
    for (auto& m : store_->messages(req.agent, req.session, 400)) {
      auto j = nlohmann::json::parse(m.content, nullptr, false);
      if (!j.is_discarded()) history.push_back(j);
    }
    info.history = history.dump();
    std::string instructions = readIfExists(home_.agents() + "/" + req.agent + "/AGENTS.md");
    if (req.agent == "main") {
      std::string user = readIfExists(home_.root + "/USER.md");
      if (!user.empty()) instructions += "\n\n# About the owner (USER.md)\n" + user;
    }
    std::string skills = skillsIndex(*cfg, home_.root, req.agent);
    if (!skills.empty()) instructions += "\n\n# Skills\n" + skills;
    info.instructions = instructions;
    info.workerTools = live.run->workerTools();
    auto facts = sessionFacts(agent, req.session, req.trust == config::Trust::Untrusted);
    bool paused = false;
    info.mode = config::enumName(policy::effectiveMode(facts, &paused));
    // The agent is told too, so that it can say why something still asks.
    if (paused) info.mode += " (bypass is paused: this conversation has read outside content; the owner can reset it)";
    const auto& modelName = cfg->effectiveModel(agent);
    auto m = cfg->models.models.find(modelName);
    if (m != cfg->models.models.end()) {
      info.modelId = m->second.id.empty() ? m->second.name : m->second.id;
      info.maxTokens = (unsigned)m->second.maxOutputTokens;
      auto p = cfg->models.providers.find(m->second.provider);
      if (p != cfg->models.providers.end()) info.provider = config::enumName(p->second.kind);
    }
    if (req.trust == config::Trust::Owner) {
      info.readRoots = agent.sandbox.read;
      info.writeRoots = agent.sandbox.write;
      for (auto& g : store_->grants(req.agent, conversationOf(req.session))) {
        if (g.kind == "read") info.readRoots.push_back(g.value);
        if (g.kind == "write") info.writeRoots.push_back(g.value);
      }
    }
    info.timeoutSec = (unsigned)cfg->pine.limits.taskTimeoutSec;
    info.shellTimeoutSec = (unsigned)cfg->pine.limits.shellTimeoutSec;

    auto paf = kj::newPromiseAndFulfiller<WorkerOutcome>();
    live.link = kj::heap<RpcLink>(wrapLinkSocket(io_.unixEventPort, mine),
                                  capnp::rpc::twoparty::Side::SERVER,
                                  kj::heap<WorkerBroker>(info, kj::mv(paf.fulfiller), live.run.get()), 16 << 20);
    tasks_.start(*t, pid, sandbox, nowMs());
    persist(*t);
    audit("task.start", {{"task", id}, {"agent", t->agent}, {"session", t->session}, {"trust", t->trust},
                         {"tainted", info.tainted}, {"worker_pid", pid}, {"sandbox", sandbox}});
    feed_.publish({{"kind", "task"}, {"task", id}, {"agent", t->agent}, {"session", t->session}, {"state", "running"}});
    if (sandbox == "none") spdlog::warn("task {} runs in a worker with sandbox: none (NOT confined)", id);

    auto describeExit = [](auto&& r) {
      auto exit = r.getExit();
      std::string how = exit.isSignal() ? "killed by signal " + std::to_string(exit.getSignal())
                                        : "exited with " + std::to_string(exit.getCode());
      return WorkerOutcome{false, "the worker ended before answering (" + how + ")"};
    };
    auto exited = process.waitRequest().send().then(describeExit);
    // A closed link usually means the worker is exiting: give it a moment so the task says how.
    auto gone = live.link->onDisconnect()
                    .then([]() { return std::string("the worker closed its link before answering"); },
                          [](kj::Exception&& e) { return "the worker's link broke: " + describeRemote(e); })
                    .then([this, process, describeExit](std::string why) mutable {
                      auto grace = io_.provider->getTimer().afterDelay(500 * kj::MILLISECONDS).then([why]() {
                        return WorkerOutcome{false, why};
                      });
                      return process.waitRequest().send().then(describeExit).exclusiveJoin(kj::mv(grace));
                    });
    unsigned limit = info.timeoutSec;
    auto timeout = io_.provider->getTimer().afterDelay(limit * kj::SECONDS).then([limit]() {
      return WorkerOutcome{false, "the task reached its time limit (limits.taskTimeoutSec: " + std::to_string(limit) +
                                      " s) and was stopped"};
    });
    auto cancelled = kj::newPromiseAndFulfiller<WorkerOutcome>();
    live.cancel = kj::mv(cancelled.fulfiller);
    if (cancelRequested_.erase(id)) live.cancel->fulfill(WorkerOutcome{false, kCancelledByOwner});
    return paf.promise.exclusiveJoin(kj::mv(exited))
        .exclusiveJoin(kj::mv(gone))
        .exclusiveJoin(kj::mv(timeout))
        .exclusiveJoin(kj::mv(cancelled.promise))
        .then([this, id](WorkerOutcome o) { endTask(id, o.done, o.text, &o); });
  });
}

void Broker::endTask(const std::string& id, bool done, const std::string& text, const WorkerOutcome* outcome) {
  TaskRecord* t = tasks_.find(id);
  auto it = running_.find(id);
  cancelRequested_.erase(id);
  // Only the session's active task hands the session on; a queued one that is cancelled does not.
  bool queued = queuedTask(id);
  Run* run = it != running_.end() && it->second->run ? it->second->run.get() : nullptr;
  std::string why = text;
  if (run && !run->stopReason().empty() && !done) why = run->stopReason() + " (" + text + ")";
  if (t && run) {
    t->tokensIn = run->tokensIn();
    t->tokensOut = run->tokensOut();
    t->cost = run->cost();
  }
  if (t && (done ? tasks_.finish(*t, why, nowMs()) : tasks_.fail(*t, why, nowMs()))) {
    persist(*t);
    auto reqIt = requests_.find(id);
    if (reqIt != requests_.end()) {
      const RunRequest& req = reqIt->second;
      // The conversation keeps what was asked and what the run added.
      std::vector<store::MessageRow> rows;
      nlohmann::json user = {{"role", "user"}, {"text", req.text}};
      if (req.trust == config::Trust::Untrusted || req.taintsSession) user["outside"] = true;
      rows.push_back({0, req.agent, req.session, id, "user", user.dump(), nowMs()});
      if (outcome && done) {
        auto transcript = nlohmann::json::parse(outcome->transcript, nullptr, false);
        if (transcript.is_array())
          for (auto& m : transcript)
            if (m.is_object() && m.contains("role") && m["role"].is_string()) {
              std::string role = m["role"].get<std::string>();
              // The worker is not trusted to name roles: only what a conversation holds is kept.
              if (role == "assistant" || role == "tool") rows.push_back({0, req.agent, req.session, id, role, m.dump(), nowMs()});
            }
      }
      try {
        store_->appendMessages(rows);
      } catch (std::exception& e) {
        spdlog::error("task {}: conversation not stored: {}", id, e.what());
      }
      // security.taint: run forgets the mark after each task (never for runs outside content started).
      bool tainted = sessionTainted(req.agent, req.session);
      if (tainted && !req.subagent && !policy::taintAfterRun(config_->pine.security.taint, req.session, tainted)) {
        auto row = store_->session(req.agent, req.session);
        if (row) {
          row->tainted = false;
          row->taintReason.clear();
          row->updatedMs = nowMs();
          store_->putSession(*row);
        }
      }
    }
    nlohmann::json f = {{"task", id}, {"agent", t->agent}, {"session", t->session}, {"state", toString(t->state)},
                        {"duration_ms", t->endedAtMs - t->createdAtMs}};
    if (!done) f["error"] = why;
    if (t->tokensIn || t->tokensOut) f["usage"] = {{"input", t->tokensIn}, {"output", t->tokensOut}, {"cost", t->cost}};
    audit("task.end", f);
    nlohmann::json n = t->toJson();
    feed_.publish({{"kind", "task"}, {"task", id}, {"agent", t->agent}, {"session", t->session},
                   {"state", toString(t->state)}, {"record", n}});
    if (done) spdlog::info("task {} done", id);
    else spdlog::warn("task {} failed: {}", id, why);
    approvals_->cancelForTask(id);
  }
  auto [first, last] = waiters_.equal_range(id);
  for (auto w = first; w != last; ++w) w->second->fulfill();
  waiters_.erase(first, last);
  if (it != running_.end()) {
    auto live = kj::mv(it->second);
    running_.erase(it);
    // A worker that answered gets a moment to exit on its own, its link still open so that
    // it can close it first; then it is killed with all it started, and the link dropped.
    auto process = live->process;
    auto exited = process.waitRequest().send().ignoreResult();
    auto grace = io_.provider->getTimer().afterDelay(done ? 1 * kj::SECONDS : 0 * kj::SECONDS);
    background_.add(exited.exclusiveJoin(kj::mv(grace))
                        .then([process]() mutable { return process.killRequest().send().ignoreResult(); })
                        .catch_([](kj::Exception&&) {})
                        .attach(kj::mv(live)));
  }
  auto reqIt = requests_.find(id);
  if (reqIt != requests_.end() && t) {
    std::string agent = reqIt->second.agent, session = reqIt->second.session;
    requests_.erase(reqIt);
    if (!queued && busySessions_.count(key(agent, session))) startNextInSession(agent, session);
  }
}

kj::Promise<const TaskRecord*> Broker::whenEnded(const std::string& id) {
  TaskRecord* t = tasks_.find(id);
  if (!t || t->ended()) return t;
  auto paf = kj::newPromiseAndFulfiller<void>();
  waiters_.emplace(id, kj::mv(paf.fulfiller));
  return paf.promise.then([this, id]() -> const TaskRecord* { return tasks_.find(id); });
}

// ---- events --------------------------------------------------------------------

void Broker::deliver(const store::Event& e) {
  feed_.publish({{"kind", "event"}, {"event", eventJson(e)}});
  auto cfg = config_;
  config::Trust trust = e.trust == "owner" ? config::Trust::Owner : config::Trust::Untrusted;
  if (policy::checkHops(e.hops, cfg->pine.limits.eventHops)) {
    audit("event.dropped", {{"eventId", e.id}, {"topic", e.topic}, {"reason", "too many hops"}});
    return;
  }
  for (auto& target : policy::routeEvent(*cfg, {e.topic, e.source, trust, e.hops})) {
    RunRequest r;
    r.agent = target.agent;
    r.trust = target.trust;
    r.origin = "route:" + (target.route.empty() ? e.topic : target.route);
    r.eventId = e.id;
    r.hops = e.hops;
    std::string body = "Event " + e.topic + " from " + e.source + ":\n" + e.payload;
    r.text = (target.prompt.empty() ? std::string() : target.prompt + "\n\n") +
             (target.trust == config::Trust::Owner ? body : tools::fenceOutside("event " + e.topic, body));
    auto s = submit(r);
    if (s.taskId.empty()) spdlog::info("event {} not routed to {}: {}", e.id, target.agent, s.error);
  }
  deliverToSubscriptions(e);
}

void Broker::addSubscription(const store::SubscriptionRow& row) {
  store_->putSubscription(row);
  subscriptions_.push_back(row);
  updateSources();  // a source nobody wanted until now starts
}

void Broker::deliverToSubscriptions(const store::Event& e) {
  if (subscriptions_.empty()) return;
  long long now = nowMs();
  auto subs = subscriptions_;  // submit() below may add to the list
  for (auto& s : subs) {
    if (s.source != e.source) continue;
    if (!s.topic.empty() && !policy::topicMatches(s.topic, e.topic)) continue;
    if (s.lastDeliveredMs && now - s.lastDeliveredMs < (long long)s.throttleSec * 1000) {
      audit("subscription.throttled", {{"subscription", s.id}, {"eventId", e.id}});
      continue;
    }
    store_->touchSubscription(s.id, now);
    for (auto& c : subscriptions_)
      if (c.id == s.id) c.lastDeliveredMs = now;
    // What a source reports is outside content unless the owner marked that source trust: owner.
    const config::Source* src = nullptr;
    for (auto& c : config_->pine.sources)
      if (c.name == s.source) src = &c;
    bool owner = src && src->trust == config::Trust::Owner && e.trust == "owner";
    RunRequest r;
    r.agent = s.agent;
    r.origin = "subscription:" + s.id;
    r.eventId = e.id;
    r.hops = e.hops;
    std::string body = "Event " + e.topic + " from " + e.source + ":\n" + e.payload;
    r.text = owner ? body : tools::fenceOutside("subscribed source " + e.source, body);
    if (s.separate) {
      r.session = s.agent + "~u-" + s.id;
      r.trust = owner ? config::Trust::Owner : config::Trust::Untrusted;
      r.separate = !owner;
    } else {
      r.session = s.session;
      r.trust = config::Trust::Owner;  // the conversation keeps its tools; the event taints it
      r.taintsSession = !owner;
    }
    auto res = submit(r);
    if (res.taskId.empty()) spdlog::info("event {} not delivered to {}: {}", e.id, s.agent, res.error);
  }
}

// ---- schedules ---------------------------------------------------------------

void Broker::armSchedules() {
  ++scheduleGeneration_;
  for (auto& s : config_->pine.schedules) armSchedule(s);
}

void Broker::armSchedule(const config::Schedule& s) {
  std::string error;
  long long last = store_->lastRun(s.name).value_or(0);
  auto next = schedule::nextRunMs(s, last, startedMs_, nowMs(), &error);
  if (!next) {
    if (!error.empty()) spdlog::error("schedule {}: {}", s.name, error);
    return;
  }
  long long delay = std::max<long long>(0, *next - nowMs());
  unsigned generation = scheduleGeneration_;
  config::Schedule copy = s;
  long long due = *next;
  background_.add(io_.provider->getTimer().afterDelay(delay * kj::MILLISECONDS).then([this, copy, generation, due]() {
    if (generation != scheduleGeneration_) return;  // the configuration changed: armed anew
    std::vector<std::string> agents;
    if (copy.agent == "*")
      for (auto& [id, a] : config_->agents) agents.push_back(id);
    else
      agents.push_back(copy.agent);
    std::string first;
    for (auto& a : agents) {
      RunRequest r;
      r.agent = a;
      r.session = copy.session.empty() ? "main" : copy.session;
      r.text = copy.task;
      r.trust = config::Trust::Owner;  // a schedule is the owner's wish (layer 7)
      r.origin = "schedule:" + copy.name;
      auto res = submit(r);
      if (first.empty()) first = res.taskId;
      if (res.taskId.empty()) spdlog::warn("schedule {}: not started for {}: {}", copy.name, a, res.error);
    }
    // The monotonic timer may fire a little before the wall clock reaches `due`: the run counts as
    // the one due then, or the same slot would be found due again.
    store_->setLastRun(copy.name, std::max(nowMs(), due), first);
    audit("schedule.run", {{"schedule", copy.name}, {"task", first}});
    armSchedule(copy);
  }));
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
