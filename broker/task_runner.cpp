#include "broker/task_runner.h"

#include "broker/task_changes.h"

#include <fcntl.h>
#include <kj/debug.h>

#include "broker/policy/approval_rules.h"
#include "broker/policy/profile.h"
#include "broker/run_mcp.h"
#include "broker/skills.h"
#include "common/fd.h"
#include "common/link_stream.h"
#include "common/log.h"

namespace pine {
namespace {

std::string readIfExists(const std::string& path) {
  try {
    return readFile(path);
  } catch (std::exception&) {
    return "";
  }
}

// Whether a run may have its conversation's opened folder: the owner's own turns (and schedules,
// sub-agents, owner-trusted sources), never a run that outside content started.
bool folderRun(const RunRequest& req) { return req.trust == config::Trust::Owner && !req.taintsSession; }

}  // namespace

struct TaskRunner::Live {
  // Declared first, destroyed last: the link goes (cancelling the worker's calls in flight) before
  // the Run those calls point at.
  std::unique_ptr<Run> run;
  kj::Own<RpcLink> link;
  proto::WorkerProcess::Client process = nullptr;
  kj::Own<kj::PromiseFulfiller<WorkerOutcome>> cancel;  // the owner's cancellation ends the run
};

TaskRunner::TaskRunner(kj::AsyncIoContext& io, const Home& home, const std::shared_ptr<const config::Home>& config,
                       RunServices& services, TaskQueue& queue, Feed& feed, kj::TaskSet& background)
    : io_(io), home_(home), config_(config), services_(services), queue_(queue), feed_(feed), background_(background) {}

TaskRunner::~TaskRunner() noexcept(false) {}

void TaskRunner::launch(const std::string& id) {
  TaskRecord* t = queue_.find(id);
  const RunRequest* reqp = queue_.request(id);
  KJ_ASSERT(t != nullptr && reqp != nullptr);
  const RunRequest& req = *reqp;
  auto cfg = config_;
  auto agentIt = cfg->agents.find(req.agent);
  if (agentIt == cfg->agents.end()) {
    // The configuration changed while the task waited (or while the broker was down).
    queue_.end(id, TaskQueue::Ending::failure("agent '" + req.agent + "' is no longer configured"));
    return;
  }
  const auto& agent = agentIt->second;
  policy::RunContext ctx;
  ctx.trust = req.trust;
  ctx.subagent = req.subagent;
  ctx.separateSubscription = req.separate;
  auto tools = policy::toolsForRun(*cfg, agent, ctx);
  bool tainted = services_.sessions().tainted(req.agent, req.session);

  auto spawn = services_.supervisor().spawnWorkerRequest();
  auto spec = spawn.initSpec();
  spec.setTaskId(id);
  spec.setAgent(req.agent);
  spec.setTainted(tainted);
  spec.setUntrusted(req.trust == config::Trust::Untrusted);
  // What the owner granted this conversation (request_access); pined re-checks every path.
  Sessions::Access granted;
  if (req.trust == config::Trust::Owner) granted = services_.sessions().granted(req.agent, req.session);
  auto grants = spec.initGrants();
  auto r = grants.initRead(std::min<size_t>(granted.read.size(), 64));
  for (size_t i = 0; i < r.size(); ++i) r.set(i, granted.read[i]);
  auto w = grants.initWrite(std::min<size_t>(granted.write.size(), 64));
  for (size_t i = 0; i < w.size(); ++i) w.set(i, granted.write[i]);
  grants.setNetwork(granted.network);
  // The conversation's opened folder (and its sub-agents'): never for a run outside content
  // started (untrusted, or an event delivered into the conversation); pined re-checks it.
  if (folderRun(req)) spec.setFolder(services_.store().sessionFolder(req.agent, Sessions::conversationOf(req.session)));

  auto run = std::make_unique<Run>(services_, id, req, cfg, tools, RunResume{t->attempt, t->usage.cost});
  run->setSandboxTainted(tainted || req.trust == config::Trust::Untrusted);
  // The run's MCP servers list their tools before its worker asks for them (run_mcp.h).
  auto supervision =
      prepareMcpServers(services_, agent, tools)
          .then([spawn = kj::mv(spawn)]() mutable -> kj::Promise<capnp::Response<proto::Supervisor::SpawnWorkerResults>> {
            return spawn.send();
          })
          .then(
              [this, id, run = kj::mv(run)](capnp::Response<proto::Supervisor::SpawnWorkerResults>&& spawned) mutable
              -> kj::Promise<void> {
                auto live = kj::heap<Live>();
                live->run = std::move(run);
                running_[id] = kj::mv(live);
                return supervise(id, spawned);
              },
              [this, id](kj::Exception&& e) {
                finish(id, WorkerOutcome{false, "pined could not start a worker: " + describeRemote(e)});
              });
  background_.add(kj::mv(supervision));
}

namespace {
constexpr size_t kHistoryBytes = 4 << 20;  // of stored messages, as JSON text
}  // namespace

TaskForWorker TaskRunner::taskFor(const TaskRecord& t, const RunRequest& req, const std::string& sandbox, Run& run) {
  auto cfg = config_;
  const auto& agent = cfg->agents.at(req.agent);
  // A resumed task's worker is told, with the task, what its interrupted attempt did.
  std::string note = queue_.noteFor(t.id);
  TaskForWorker info{t.id, t.agent, note.empty() ? t.text : t.text + "\n\n" + note, sandbox};
  info.session = req.session;
  info.trust = trustName(req.trust);
  info.tainted = services_.sessions().tainted(req.agent, req.session);
  // The conversation as the worker gets it: the newest messages within kHistoryBytes, from a message
  // that opens a turn on (a tool result without the call it answers would be refused by a provider).
  // Past that the task message would outgrow what one message between processes may carry, and
  // the worker died on it at every turn from then on.
  auto rows = services_.store().messages(req.agent, req.session, 400);
  size_t from = rows.size(), bytes = 0;
  while (from > 0 && bytes + rows[from - 1].content.size() <= kHistoryBytes) bytes += rows[--from].content.size();
  while (from < rows.size() && rows[from].role != "user" && rows[from].role != "event") ++from;
  nlohmann::json history = nlohmann::json::array();
  for (size_t i = from; i < rows.size(); ++i) {
    auto j = nlohmann::json::parse(rows[i].content, nullptr, false);
    if (!j.is_discarded()) history.push_back(j);
  }
  info.history = history.dump();
  if (from > 0) {
    spdlog::info("task {}: the {} oldest messages of {}/{} are left out of its history ({} MB at most)", t.id, from,
                 req.agent, req.session, kHistoryBytes >> 20);
    info.text += "\n\n(pine: the " + std::to_string(from) +
                 " oldest messages of this conversation are not shown to you; it is larger than a run is given. "
                 "The owner can start it afresh with a reset.)";
  }
  std::string instructions = readIfExists(home_.agents() + "/" + req.agent + "/AGENTS.md");
  if (req.agent == "main") {
    std::string user = readIfExists(home_.root + "/USER.md");
    if (!user.empty()) instructions += "\n\n# About the owner (USER.md)\n" + user;
  }
  std::string skills = skillsIndex(*cfg, home_.root, req.agent);
  if (!skills.empty()) instructions += "\n\n# Skills\n" + skills;
  info.instructions = instructions;
  info.workerTools = run.workerTools();
  auto facts = services_.sessions().facts(agent, req.session, req.trust == config::Trust::Untrusted);
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
    auto granted = services_.sessions().granted(req.agent, req.session);
    info.readRoots.insert(info.readRoots.end(), granted.read.begin(), granted.read.end());
    info.writeRoots.insert(info.writeRoots.end(), granted.write.begin(), granted.write.end());
    if (folderRun(req)) info.folder = services_.store().sessionFolder(req.agent, Sessions::conversationOf(req.session));
  }
  info.attachments = services_.store().taskFilePaths(t.id);
  info.timeoutSec = (unsigned)cfg->pine.limits.taskTimeoutSec;
  info.shellTimeoutSec = (unsigned)cfg->pine.limits.shellTimeoutSec;
  return info;
}

kj::Promise<void> TaskRunner::supervise(const std::string& id, proto::Supervisor::SpawnWorkerResults::Reader spawned) {
  pid_t pid = spawned.getPid();
  std::string sandbox = spawned.getSandbox();
  auto process = spawned.getProcess();
  auto socket = spawned.getSocket();
  running_[id]->process = process;
  // `socket` owns the fd until we have our own copy: keep it alive until then.
  return socket.getFd().then([this, id, pid, sandbox, process, socket](kj::Maybe<int> fd) mutable -> kj::Promise<void> {
    TaskRecord* t = queue_.find(id);
    const RunRequest* req = queue_.request(id);
    auto liveIt = running_.find(id);
    KJ_ASSERT(t != nullptr && req != nullptr && liveIt != running_.end());
    Live& live = *liveIt->second;
    int mine = -1;
    KJ_IF_MAYBE(f, fd) { mine = fcntl(*f, F_DUPFD_CLOEXEC, 3); }
    if (mine < 0) {
      process.killRequest().send().detach([](kj::Exception&&) {});
      finish(id, WorkerOutcome{false, "pined handed over no socket for the worker"});
      return kj::READY_NOW;
    }
    TaskForWorker info = taskFor(*t, *req, sandbox, *live.run);

    auto paf = kj::newPromiseAndFulfiller<WorkerOutcome>();
    live.link = kj::heap<RpcLink>(wrapLinkSocket(io_.unixEventPort, mine), capnp::rpc::twoparty::Side::SERVER,
                                  kj::heap<WorkerBroker>(info, kj::mv(paf.fulfiller), live.run.get()), 16 << 20);
    queue_.started(id, pid, sandbox);
    audit("task.start", {{"task", id}, {"agent", t->agent}, {"session", t->session}, {"trust", t->trust},
                         {"tainted", info.tainted}, {"worker_pid", pid}, {"sandbox", sandbox}, {"attempt", t->attempt}});
    feed_.publish({{"kind", "task"}, {"task", id}, {"agent", t->agent}, {"session", t->session}, {"state", "running"}});
    if (sandbox == "none") spdlog::warn("task {} runs in a worker with sandbox: none (NOT confined)", id);

    auto describeExit = [](auto&& r) {
      auto exit = r.getExit();
      std::string how = exit.isSignal() ? "killed by signal " + std::to_string(exit.getSignal())
                                        : "exited with " + std::to_string(exit.getCode());
      return WorkerOutcome{false, "the worker ended before answering (" + how + ")"};
    };
    auto exited = process.waitRequest().send().then(describeExit);
    // A closed link usually means the worker is exiting: give it a moment so the task says how
    // (2 s: pined reaps it and answers wait() late on a loaded machine, ASan builds in CI).
    auto gone = live.link->onDisconnect()
                    .then([]() { return std::string("the worker closed its link before answering"); },
                          [](kj::Exception&& e) { return "the worker's link broke: " + describeRemote(e); })
                    .then([this, process, describeExit](std::string why) mutable {
                      auto grace = io_.provider->getTimer().afterDelay(2000 * kj::MILLISECONDS).then([why]() {
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
        .then([this, id](WorkerOutcome o) { finish(id, o); });
  });
}

bool TaskRunner::cancel(const std::string& id) {
  auto it = running_.find(id);
  if (it != running_.end() && it->second->cancel) {
    // Its worker is killed with all it started once the run ends (finish).
    if (it->second->cancel->isWaiting()) it->second->cancel->fulfill(WorkerOutcome{false, kCancelledByOwner});
  } else {
    cancelRequested_.insert(id);  // pined is starting its worker: ended as soon as it is up
  }
  return true;
}

void TaskRunner::finish(const std::string& id, const WorkerOutcome& outcome) {
  cancelRequested_.erase(id);
  kj::Own<Live> live;
  if (auto it = running_.find(id); it != running_.end()) {
    live = kj::mv(it->second);
    running_.erase(it);
  }
  // Once pined has reaped it (and taken the workspace's checkpoint): what it changed (task_changes.h).
  // A run outside content started cannot write its workspace and gets no checkpoint.
  const RunRequest* req = queue_.request(id);
  const bool checkpointed = req && req->trust != config::Trust::Untrusted;
  const std::string agent = req ? req->agent : "";
  const bool tainted = req && services_.sessions().tainted(req->agent, req->session);
  TaskQueue::Ending e{outcome.done, outcome.text, outcome.transcript, live && live->run ? live->run->stopReason() : ""};
  queue_.end(id, e);
  if (!live) return;
  // A worker that answered gets a moment to exit on its own, its link still open so that
  // it can close it first; then it is killed with all it started, and the link dropped.
  auto process = live->process;
  auto exited = process.waitRequest().send().ignoreResult();
  auto grace = io_.provider->getTimer().afterDelay(outcome.done ? 1 * kj::SECONDS : 0 * kj::SECONDS);
  auto done = exited.exclusiveJoin(kj::mv(grace))
                  .then([process]() mutable { return process.killRequest().send().ignoreResult(); })
                  .then([this, process, id, agent, tainted, checkpointed]() mutable -> kj::Promise<void> {
                    if (!checkpointed) return kj::READY_NOW;
                    return process.waitRequest().send().ignoreResult().then(
                        [this, id, agent, tainted]() { return recordTaskChanges(services_, id, agent, tainted); });
                  })
                  .catch_([](kj::Exception&&) {})
                  .attach(kj::mv(live))
                  .fork();
  const uint64_t generation = ++settlingGeneration_;
  auto& entry = settling_.insert_or_assign(id, Settling{generation, kj::mv(done)}).first->second;
  background_.add(entry.done.addBranch().then([this, id, generation]() {
    auto it = settling_.find(id);
    if (it != settling_.end() && it->second.generation == generation) settling_.erase(it);
  }));
}

kj::Promise<void> TaskRunner::settled(const std::string& taskId) {
  auto it = settling_.find(taskId);
  if (it == settling_.end()) return kj::READY_NOW;
  // Not for ever: pined's checkpoint program has no time limit of its own. Past this, the
  // request goes on and says what pined says then (no checkpoint yet).
  return it->second.done.addBranch().exclusiveJoin(io_.provider->getTimer().afterDelay(2 * kj::MINUTES));
}

void TaskRunner::stopAll(const std::string& why) {
  std::vector<std::string> ids;
  for (auto& [id, r] : running_) ids.push_back(id);
  for (auto& id : ids) finish(id, WorkerOutcome{false, why});
}

}  // namespace pine
