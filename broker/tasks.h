// The broker's table of tasks: what was asked, which worker runs it, how it
// ended. The live index of the broker's tasks; each change is also written to the store.
#pragma once
#include <sys/types.h>

#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "broker/store/rows.h"

namespace pine {

enum class TaskState { Queued, Running, Done, Failed };
const char* toString(TaskState s);
// The state a stored row names ("refused" is an ended task that never ran: Failed); nullopt for others.
std::optional<TaskState> parseTaskState(const std::string& s);

struct TaskRecord {
  std::string id;
  std::string agent;
  std::string text;
  TaskState state = TaskState::Queued;
  pid_t workerPid = 0;
  std::string sandbox;
  long long createdAtMs = 0;
  long long startedAtMs = 0;
  long long endedAtMs = 0;
  std::string answer;  // when Done
  std::string error;   // when Failed: why, in words an owner can act on
  std::string session = "main";
  std::string trust = "owner";
  std::string origin;  // who started it: owner, route:NAME, schedule:NAME, delegate:TASK, ...
  std::string parent;
  std::string eventId;
  int depth = 0;
  int attempt = 0;  // how often it was resumed after a crash of the broker
  store::Usage usage;  // model calls so far (broker/usage.h prices them)
  bool ended() const { return state == TaskState::Done || state == TaskState::Failed; }
  nlohmann::json toJson() const;
};

class TaskTable {
 public:
  explicit TaskTable(size_t keepEnded = 200) : keepEnded_(keepEnded) {}

  TaskRecord& create(const std::string& agent, const std::string& text, long long nowMs);
  // Takes up a task the store kept across a crash of the broker, under its own id.
  TaskRecord& adopt(TaskRecord t);
  TaskRecord* find(const std::string& id);
  // Moves a task to Running.
  void start(TaskRecord& t, pid_t workerPid, const std::string& sandbox, long long nowMs);
  // Ends a task once; later calls are ignored and return false (the first word stands).
  bool finish(TaskRecord& t, const std::string& answer, long long nowMs);
  bool fail(TaskRecord& t, const std::string& error, long long nowMs);

  std::vector<const TaskRecord*> active() const;
  std::vector<const TaskRecord*> recent(size_t limit) const;

 private:
  bool end(TaskRecord& t, TaskState state, long long nowMs);
  void forgetOldEnded(const std::string& keep);
  size_t keepEnded_;
  std::map<std::string, std::unique_ptr<TaskRecord>> tasks_;
  std::deque<std::string> order_;  // creation order, for listing and for forgetting old ended tasks
  unsigned counter_ = 0;
};

}  // namespace pine
