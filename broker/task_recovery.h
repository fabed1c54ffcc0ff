// What a crash of the broker left in the store, taken up when it starts again (issue 12
// item 6). pined names each of its starts by a boot id: the same one means only the broker
// restarted, and an unfinished task resumes from its stored conversation in a new worker,
// told what its journal says was done and what was cut off, its pending approvals still
// answerable and bound to it. A new one means pined itself started afresh: grants, "always"
// answers and mode switches are gone (the seed: until the daemon restarts), and no task is
// resumed. Where resuming is not safe the task ends with a clear reason and its approvals
// are closed with it. Touches the store's tasks, journal, approvals and boot.
#pragma once
#include <string>
#include <vector>

#include "broker/approval_desk.h"
#include "broker/store/store.h"
#include "broker/task_queue.h"
#include "config/model.h"

namespace pine {

// A task is resumed at most this often; one that keeps meeting a crash ends.
constexpr int kMaxResumes = 2;

struct RecoveryPlan {
  struct Resume {
    store::TaskRow row;
    RunRequest request;
    std::string note;  // what the resumed run is told (TaskJournal::resumeNote)
  };
  struct End {
    store::TaskRow row;
    std::string why;
  };
  std::vector<Resume> resume;  // in creation order
  std::vector<End> end;
};

// Decides, for each unfinished task, whether it resumes. `pinedRestarted`: Store::beginBoot
// said pined started afresh. Reads the journal and approvals of each task from `store`.
RecoveryPlan planRecovery(const std::vector<store::TaskRow>& unfinished, bool pinedRestarted,
                          const config::Home& config, const store::Store& store);

// Carries the plan out at start: cut-off journal steps become unknown, overdue approvals time
// out, tasks end or go back into their queue. Returns the plan carried out.
RecoveryPlan recoverTasks(store::Store& store, Approvals& approvals, TaskQueue& queue, const config::Home& config,
                          bool pinedRestarted);

}  // namespace pine
