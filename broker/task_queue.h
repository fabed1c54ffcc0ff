// The task queue: admits a run (the agent exists, its plan accepts the trust, the agent's
// queue has room), keeps one task running per conversation and the rest waiting in order,
// writes every change of a task to the store with what started it (so that a crash of the
// broker loses none: task_recovery.h takes them up again), ends each task once (the
// conversation keeps what was asked and answered, its approvals are closed, whoever waits is
// told) and hands the conversation to its next task. Starting and stopping workers is the
// Launcher's (task_runner.h). Touches the store's tasks and messages, the sessions' taint
// after a run, the approvals of ended tasks, the feed and the audit log.
#pragma once
#include <kj/async.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "broker/approval_desk.h"
#include "broker/feed.h"
#include "broker/run_services.h"
#include "broker/sessions.h"
#include "broker/tasks.h"

namespace pine {

// What started a task, as the store keeps it (TaskRow.request) for a resume after a crash.
nlohmann::json requestJson(const RunRequest& r);
// The request a stored row names; nullopt when its request text is not one pine wrote.
std::optional<RunRequest> requestFromRow(const store::TaskRow& row);

class TaskQueue {
 public:
  class Launcher {
   public:
    virtual ~Launcher() noexcept(false) = default;
    virtual void launch(const std::string& taskId) = 0;
    // Stops the task's worker, running or being started; false when it has none.
    virtual bool cancel(const std::string& taskId) = 0;
  };
  // How a task ended, as its worker (or the broker) tells it.
  struct Ending {
    bool done = false;
    std::string text;               // the answer, or why it failed
    std::string transcript = "[]";  // what the run added to the conversation (JSON array)
    std::string stopReason;         // the run's own reason to stop (budget, repeats), if any
    static Ending failure(std::string why) {
      Ending e;
      e.text = std::move(why);
      return e;
    }
  };

  TaskQueue(store::Store& store, const Home& home, const std::shared_ptr<const config::Home>& config,
            Sessions& sessions, Approvals& approvals, Feed& feed);
  KJ_DISALLOW_COPY(TaskQueue);
  void setLauncher(Launcher& launcher) { launcher_ = &launcher; }

  Submitted submit(RunRequest req);
  // A task the store kept across a crash of the broker, queued again in its conversation (call
  // in creation order). `note` tells the resumed run what its interrupted attempt did.
  void restore(const store::TaskRow& row, RunRequest req, std::string note);
  // A task the store kept that is not resumed: ended failed with `why`, its approvals closed.
  void endStored(store::TaskRow row, const std::string& why);

  enum class Cancel { Unknown, AlreadyEnded, Cancelled };
  Cancel cancel(const std::string& id);
  // Once: the task's end, its conversation, its approvals, its waiters, the next task.
  void end(const std::string& id, const Ending& ending);
  void started(const std::string& id, pid_t pid, const std::string& sandbox);
  void recordUsage(const std::string& id, const store::Usage& usage);

  kj::Promise<std::optional<TaskRecord>> whenEnded(const std::string& id);
  TaskRecord* find(const std::string& id) { return tasks_.find(id); }
  const RunRequest* request(const std::string& id) const;
  // What a resumed task's worker is told about its interrupted attempt ("" if none).
  std::string noteFor(const std::string& id) const;
  std::vector<const TaskRecord*> active() const { return tasks_.active(); }
  size_t runningSubagents(const std::string& agent, const std::string& conversation) const;

 private:
  bool queued(const std::string& id) const;  // waiting in its session's queue
  void startNextInSession(const std::string& agent, const std::string& session);
  void persist(const TaskRecord& t);
  void enqueue(const std::string& id);

  store::Store& store_;
  const Home& home_;
  const std::shared_ptr<const config::Home>& config_;
  Sessions& sessions_;
  Approvals& approvals_;
  Feed& feed_;
  Launcher* launcher_ = nullptr;
  TaskTable tasks_;
  std::map<std::string, RunRequest> requests_;                   // task id -> what started it (until it ends)
  std::map<std::string, std::string> notes_;                     // task id -> what its resumed run is told
  std::map<std::string, std::deque<std::string>> sessionQueue_;  // "agent/session" -> queued task ids
  std::set<std::string> busySessions_;
  std::multimap<std::string, kj::Own<kj::PromiseFulfiller<void>>> waiters_;
};

}  // namespace pine
