#include "broker/task_queue.h"

#include <kj/debug.h>

#include <algorithm>

#include "broker/policy/profile.h"
#include "broker/policy/routing.h"
#include "broker/policy/run_limits.h"
#include "broker/usage.h"
#include "broker/worker_link.h"
#include "common/log.h"

namespace pine {
namespace {

std::string queueKey(const std::string& agent, const std::string& session) { return agent + "/" + session; }

}  // namespace

nlohmann::json requestJson(const RunRequest& r) {
  return {{"chain", r.chain},       {"hops", r.hops},         {"separate", r.separate},
          {"subagent", r.subagent}, {"taintsSession", r.taintsSession}};
}

std::optional<RunRequest> requestFromRow(const store::TaskRow& row) {
  auto j = nlohmann::json::parse(row.request, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  RunRequest r;
  r.agent = row.agent;
  r.session = row.session;
  r.text = row.text;
  r.trust = row.trust == "owner" ? config::Trust::Owner : config::Trust::Untrusted;
  r.origin = row.origin;
  r.parentTask = row.parent;
  r.depth = row.depth;
  r.eventId = row.eventId;
  try {
    if (j.contains("chain")) r.chain = j["chain"].get<std::vector<std::string>>();
    r.hops = j.value("hops", 0);
    r.separate = j.value("separate", false);
    r.subagent = j.value("subagent", false);
    r.taintsSession = j.value("taintsSession", false);
  } catch (std::exception&) {
    return std::nullopt;
  }
  return r;
}

TaskQueue::TaskQueue(store::Store& store, const Home& home, const std::shared_ptr<const config::Home>& config,
                     Sessions& sessions, Approvals& approvals, Feed& feed)
    : store_(store), home_(home), config_(config), sessions_(sessions), approvals_(approvals), feed_(feed) {}

void TaskQueue::persist(const TaskRecord& t) {
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
  r.eventId = t.eventId;
  r.origin = t.origin;
  r.attempt = t.attempt;
  r.depth = t.depth;
  r.createdMs = t.createdAtMs;
  r.startedMs = t.startedAtMs;
  r.endedMs = t.endedAtMs;
  r.usage = t.usage;
  auto req = requests_.find(t.id);
  if (req != requests_.end()) r.request = requestJson(req->second).dump();
  else if (auto stored = store_.task(t.id)) r.request = stored->request;
  try {
    store_.putTask(r);
  } catch (std::exception& e) {
    spdlog::error("task {}: not stored: {}", t.id, e.what());
  }
}

Submitted TaskQueue::submit(RunRequest req) {
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
  size_t inQueue = 0;
  for (auto* t : tasks_.active())
    if (t->agent == req.agent) ++inQueue;
  if (auto why = policy::checkQueue(inQueue, cfg->pine.limits.queuePerAgent)) {
    audit("task.refused", {{"agent", req.agent}, {"origin", req.origin}, {"reason", *why}});
    return {"", "", *why, 429};
  }
  if (req.trust == config::Trust::Untrusted)
    req.text = policy::clipUntrustedPrompt(req.text, cfg->pine.limits.untrustedPromptMaxBytes);
  TaskRecord& t = tasks_.create(req.agent, req.text, nowMs());
  t.session = req.session;
  t.trust = trustName(req.trust);
  t.origin = req.origin;
  t.parent = req.parentTask;
  t.eventId = req.eventId;
  t.depth = req.depth;
  std::string id = t.id;
  requests_[id] = req;
  persist(t);
  // Runs that outside content started are restricted from their first step.
  if (req.trust == config::Trust::Untrusted)
    sessions_.markTainted(req.agent, req.session, "started by outside content (" + req.origin + ")");
  if (req.taintsSession)
    sessions_.markTainted(req.agent, req.session, "an event of a subscribed source arrived (" + req.origin + ")");
  audit("task.queued", {{"task", id}, {"agent", req.agent}, {"session", req.session}, {"trust", t.trust}, {"origin", req.origin}});
  feed_.publish({{"kind", "task"}, {"task", id}, {"agent", req.agent}, {"session", req.session}, {"state", "queued"}});
  enqueue(id);
  return {id, t.session, "", 200};
}

void TaskQueue::enqueue(const std::string& id) {
  const RunRequest& req = requests_.at(id);
  std::string k = queueKey(req.agent, req.session);
  sessionQueue_[k].push_back(id);
  if (!busySessions_.count(k)) startNextInSession(req.agent, req.session);
}

void TaskQueue::restore(const store::TaskRow& row, RunRequest req, std::string note) {
  TaskRecord t;
  t.id = row.id;
  t.agent = row.agent;
  t.text = row.text;
  t.state = TaskState::Queued;
  t.createdAtMs = row.createdMs;
  t.session = row.session;
  t.trust = row.trust;
  t.origin = row.origin;
  t.parent = row.parent;
  t.eventId = row.eventId;
  t.depth = row.depth;
  t.usage = row.usage;
  // A task that had started is a new attempt; one still waiting in its queue is not.
  t.attempt = parseTaskState(row.state) == TaskState::Running ? row.attempt + 1 : row.attempt;
  TaskRecord& stored = tasks_.adopt(std::move(t));
  requests_[row.id] = std::move(req);
  if (!note.empty()) notes_[row.id] = std::move(note);
  persist(stored);
  audit("task.resume", {{"task", row.id}, {"agent", row.agent}, {"session", row.session}, {"was", row.state},
                        {"attempt", stored.attempt}});
  enqueue(row.id);
}

void TaskQueue::endStored(store::TaskRow row, const std::string& why) {
  row.state = toString(TaskState::Failed);
  row.error = why;
  row.endedMs = nowMs();
  try {
    store_.putTask(row);
  } catch (std::exception& e) {
    spdlog::error("task {}: not stored: {}", row.id, e.what());
  }
  approvals_.cancelForTask(row.id, "its task ended: " + why);
  audit("task.end", {{"task", row.id}, {"agent", row.agent}, {"session", row.session}, {"state", row.state},
                     {"error", why}, {"duration_ms", row.endedMs - row.createdMs}});
  spdlog::warn("task {} failed: {}", row.id, why);
}

TaskQueue::Cancel TaskQueue::cancel(const std::string& id) {
  TaskRecord* t = tasks_.find(id);
  if (!t) return Cancel::Unknown;
  if (t->ended()) return Cancel::AlreadyEnded;
  audit("task.cancel", {{"task", id}, {"agent", t->agent}, {"session", t->session}, {"by", "owner"}});
  // Still queued: it never runs. Otherwise its worker is killed with all it started once the run ends.
  if (queued(id) || !launcher_ || !launcher_->cancel(id)) end(id, Ending::failure(kCancelledByOwner));
  return Cancel::Cancelled;
}

bool TaskQueue::queued(const std::string& id) const {
  for (auto& [k, q] : sessionQueue_)
    if (std::find(q.begin(), q.end(), id) != q.end()) return true;
  return false;
}

void TaskQueue::startNextInSession(const std::string& agent, const std::string& session) {
  std::string k = queueKey(agent, session);
  auto& q = sessionQueue_[k];
  while (!q.empty()) {
    std::string id = q.front();
    q.pop_front();
    TaskRecord* t = tasks_.find(id);
    if (!t || t->ended()) continue;
    busySessions_.insert(k);
    KJ_ASSERT(launcher_ != nullptr);
    launcher_->launch(id);
    return;
  }
  busySessions_.erase(k);
  sessionQueue_.erase(k);
}

void TaskQueue::started(const std::string& id, pid_t pid, const std::string& sandbox) {
  TaskRecord* t = tasks_.find(id);
  if (!t) return;
  tasks_.start(*t, pid, sandbox, nowMs());
  persist(*t);
}

void TaskQueue::recordUsage(const std::string& id, const store::Usage& usage) {
  TaskRecord* t = tasks_.find(id);
  if (!t || t->ended()) return;
  t->usage += usage;
  persist(*t);
}

void TaskQueue::end(const std::string& id, const Ending& ending) {
  TaskRecord* t = tasks_.find(id);
  // Only the session's active task hands the session on; a queued one that is cancelled does not.
  bool wasQueued = queued(id);
  bool done = ending.done;
  std::string why = ending.text;
  if (!ending.stopReason.empty() && !done) why = ending.stopReason + " (" + ending.text + ")";
  if (t && (done ? tasks_.finish(*t, why, nowMs()) : tasks_.fail(*t, why, nowMs()))) {
    persist(*t);
    auto reqIt = requests_.find(id);
    if (reqIt != requests_.end()) {
      const RunRequest& req = reqIt->second;
      // The conversation keeps what was asked, what pine told a resumed run, and what the run added.
      std::vector<store::MessageRow> rows;
      nlohmann::json user = {{"role", "user"}, {"text", req.text}};
      if (req.trust == config::Trust::Untrusted || req.taintsSession) user["outside"] = true;
      rows.push_back({0, req.agent, req.session, id, "user", user.dump(), nowMs()});
      if (auto note = notes_.find(id); note != notes_.end())
        rows.push_back({0, req.agent, req.session, id, "note",
                        nlohmann::json{{"role", "note"}, {"text", note->second}}.dump(), nowMs()});
      if (done) {
        auto transcript = nlohmann::json::parse(ending.transcript, nullptr, false);
        if (transcript.is_array())
          for (auto& m : transcript)
            if (m.is_object() && m.contains("role") && m["role"].is_string()) {
              std::string role = m["role"].get<std::string>();
              // The worker is not trusted to name roles: only what a conversation holds is kept.
              if (role == "assistant" || role == "tool")
                rows.push_back({0, req.agent, req.session, id, role, m.dump(), nowMs()});
            }
      }
      try {
        store_.appendMessages(rows);
      } catch (std::exception& e) {
        spdlog::error("task {}: conversation not stored: {}", id, e.what());
      }
      // security.taint: run forgets the mark after each task (never for runs outside content started).
      sessions_.afterRun(req.agent, req.session, req.subagent);
    }
    nlohmann::json f = {{"task", id}, {"agent", t->agent}, {"session", t->session}, {"state", toString(t->state)},
                        {"duration_ms", t->endedAtMs - t->createdAtMs}};
    if (!done) f["error"] = why;
    if (t->usage.any()) f["usage"] = usageJson(t->usage);
    audit("task.end", f);
    nlohmann::json n = t->toJson();
    feed_.publish({{"kind", "task"}, {"task", id}, {"agent", t->agent}, {"session", t->session},
                   {"state", toString(t->state)}, {"record", n}});
    if (done) spdlog::info("task {} done", id);
    else spdlog::warn("task {} failed: {}", id, why);
    approvals_.cancelForTask(id);
  }
  notes_.erase(id);
  auto [first, last] = waiters_.equal_range(id);
  for (auto w = first; w != last; ++w) w->second->fulfill();
  waiters_.erase(first, last);
  auto reqIt = requests_.find(id);
  if (reqIt != requests_.end() && t) {
    std::string agent = reqIt->second.agent, session = reqIt->second.session;
    requests_.erase(reqIt);
    if (!wasQueued && busySessions_.count(queueKey(agent, session))) startNextInSession(agent, session);
  }
}

kj::Promise<std::optional<TaskRecord>> TaskQueue::whenEnded(const std::string& id) {
  TaskRecord* t = tasks_.find(id);
  if (!t) return std::optional<TaskRecord>();
  if (t->ended()) return std::optional<TaskRecord>(*t);
  auto paf = kj::newPromiseAndFulfiller<void>();
  waiters_.emplace(id, kj::mv(paf.fulfiller));
  return paf.promise.then([this, id]() {
    TaskRecord* ended = tasks_.find(id);
    return ended ? std::optional<TaskRecord>(*ended) : std::optional<TaskRecord>();
  });
}

const RunRequest* TaskQueue::request(const std::string& id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second;
}

std::string TaskQueue::noteFor(const std::string& id) const {
  auto it = notes_.find(id);
  return it == notes_.end() ? "" : it->second;
}

size_t TaskQueue::runningSubagents(const std::string& agent, const std::string& conversation) const {
  size_t n = 0;
  for (auto& [id, r] : requests_)
    if (r.subagent && r.agent == agent && Sessions::conversationOf(r.session) == conversation) ++n;
  return n;
}

}  // namespace pine
