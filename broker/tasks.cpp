#include "broker/tasks.h"

#include <openssl/rand.h>

#include "broker/usage.h"
#include "common/log.h"

namespace pine {

const char* toString(TaskState s) {
  switch (s) {
    case TaskState::Queued: return "queued";
    case TaskState::Running: return "running";
    case TaskState::Done: return "done";
    case TaskState::Failed: return "failed";
  }
  return "unknown";
}

std::optional<TaskState> parseTaskState(const std::string& s) {
  if (s == "queued") return TaskState::Queued;
  if (s == "running") return TaskState::Running;
  if (s == "done") return TaskState::Done;
  if (s == "failed" || s == "refused") return TaskState::Failed;
  return std::nullopt;
}

nlohmann::json TaskRecord::toJson() const {
  nlohmann::json j = {{"id", id}, {"agent", agent}, {"state", toString(state)}, {"createdAt", isoTime(createdAtMs)}};
  if (workerPid) j["workerPid"] = workerPid;
  if (!sandbox.empty()) j["sandbox"] = sandbox;
  if (startedAtMs) j["startedAt"] = isoTime(startedAtMs);
  if (endedAtMs) j["endedAt"] = isoTime(endedAtMs);
  j["session"] = session;
  j["trust"] = trust;
  if (!origin.empty()) j["origin"] = origin;
  if (!parent.empty()) j["parent"] = parent;
  if (attempt) j["resumed"] = attempt;
  if (usage.any()) j["usage"] = usageJson(usage);
  if (state == TaskState::Done) j["answer"] = answer;
  if (state == TaskState::Failed) j["error"] = error;
  return j;
}

TaskRecord& TaskTable::create(const std::string& agent, const std::string& text, long long nowMs) {
  unsigned char r[3];
  if (RAND_bytes(r, sizeof r) != 1) r[0] = r[1] = r[2] = 0;
  char id[48];
  snprintf(id, sizeof id, "t%lld-%u-%02x%02x%02x", nowMs, ++counter_, r[0], r[1], r[2]);
  auto t = std::make_unique<TaskRecord>();
  t->id = id;
  t->agent = agent;
  t->text = text;
  t->createdAtMs = nowMs;
  TaskRecord& ref = *t;
  tasks_[ref.id] = std::move(t);
  order_.push_back(ref.id);
  return ref;
}

TaskRecord& TaskTable::adopt(TaskRecord t) {
  auto owned = std::make_unique<TaskRecord>(std::move(t));
  TaskRecord& ref = *owned;
  if (!tasks_.count(ref.id)) order_.push_back(ref.id);
  tasks_[ref.id] = std::move(owned);
  return ref;
}

TaskRecord* TaskTable::find(const std::string& id) {
  auto it = tasks_.find(id);
  return it == tasks_.end() ? nullptr : it->second.get();
}

void TaskTable::start(TaskRecord& t, pid_t workerPid, const std::string& sandbox, long long nowMs) {
  if (t.ended()) return;
  t.state = TaskState::Running;
  t.workerPid = workerPid;
  t.sandbox = sandbox;
  t.startedAtMs = nowMs;
}

bool TaskTable::end(TaskRecord& t, TaskState state, long long nowMs) {
  if (t.ended()) return false;
  t.state = state;
  t.endedAtMs = nowMs;
  forgetOldEnded(t.id);
  return true;
}

void TaskTable::forgetOldEnded(const std::string& keep) {
  // Forget the oldest ended tasks beyond the bound; active ones (and `keep`) stay.
  size_t ended = 0;
  for (auto& id : order_) ended += tasks_[id]->ended();
  for (auto it = order_.begin(); ended > keepEnded_ && it != order_.end();) {
    if (*it != keep && tasks_[*it]->ended()) {
      tasks_.erase(*it);
      it = order_.erase(it);
      --ended;
    } else {
      ++it;
    }
  }
}

bool TaskTable::finish(TaskRecord& t, const std::string& answer, long long nowMs) {
  if (!end(t, TaskState::Done, nowMs)) return false;
  t.answer = answer;
  return true;
}

bool TaskTable::fail(TaskRecord& t, const std::string& error, long long nowMs) {
  if (!end(t, TaskState::Failed, nowMs)) return false;
  t.error = error;
  return true;
}

std::vector<const TaskRecord*> TaskTable::active() const {
  std::vector<const TaskRecord*> out;
  for (auto& id : order_)
    if (auto& t = tasks_.at(id); !t->ended()) out.push_back(t.get());
  return out;
}

std::vector<const TaskRecord*> TaskTable::recent(size_t limit) const {
  std::vector<const TaskRecord*> out;
  for (auto it = order_.rbegin(); it != order_.rend() && out.size() < limit; ++it) out.push_back(tasks_.at(*it).get());
  return out;
}

}  // namespace pine
