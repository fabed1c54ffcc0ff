// The worker lifecycle of a task: asks pined for a worker (with its conversation's grants),
// hands it its task (the conversation so far, instructions, tools, and for a resumed task
// what its interrupted attempt did) with its Run, supervises it until it answers, fails,
// exits, reaches its time limit or is cancelled, tells the queue how it ended, and kills
// whatever is left. Touches pined's spawnWorker, the store's messages (read), the agent's
// instruction files (read), the feed and the audit log.
#pragma once
#include <kj/async-io.h>

#include <map>
#include <memory>
#include <set>
#include <string>

#include "broker/run.h"
#include "broker/task_queue.h"
#include "common/home.h"
#include "common/rpc_link.h"

namespace pine {

class TaskRunner final : public TaskQueue::Launcher {
 public:
  TaskRunner(kj::AsyncIoContext& io, const Home& home, const std::shared_ptr<const config::Home>& config,
             RunServices& services, TaskQueue& queue, Feed& feed, kj::TaskSet& background);
  ~TaskRunner() noexcept(false);
  KJ_DISALLOW_COPY(TaskRunner);

  void launch(const std::string& taskId) override;
  bool cancel(const std::string& taskId) override;
  // The broker stops: whatever still runs ends failed, `why`.
  void stopAll(const std::string& why);
  // Resolves once a task that has ended has its worker reaped and, when it writes its workspace,
  // its "after" checkpoint taken and recorded; at once when nothing is left to do. A task ends
  // (and its answer is given) before that, so `pinectl changes` right after it waits here (two
  // minutes at most).
  kj::Promise<void> settled(const std::string& taskId);

 private:
  struct Live;
  kj::Promise<void> supervise(const std::string& id, proto::Supervisor::SpawnWorkerResults::Reader spawned);
  TaskForWorker taskFor(const TaskRecord& t, const RunRequest& req, const std::string& sandbox, Run& run);
  void finish(const std::string& id, const WorkerOutcome& outcome);

  kj::AsyncIoContext& io_;
  const Home& home_;
  const std::shared_ptr<const config::Home>& config_;
  RunServices& services_;
  TaskQueue& queue_;
  Feed& feed_;
  kj::TaskSet& background_;
  std::map<std::string, kj::Own<Live>> running_;
  std::set<std::string> cancelRequested_;  // cancelled while pined was starting their worker
  struct Settling {
    uint64_t generation;
    kj::ForkedPromise<void> done;
  };
  std::map<std::string, Settling> settling_;  // ended; worker not yet reaped or checkpoint not recorded
  uint64_t settlingGeneration_ = 0;
};

}  // namespace pine
