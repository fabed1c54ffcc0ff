#include "broker/task_recovery.h"

#include "broker/task_journal.h"
#include "common/log.h"

namespace pine {

RecoveryPlan planRecovery(const std::vector<store::TaskRow>& unfinished, bool pinedRestarted,
                          const config::Home& config, const store::Store& store) {
  RecoveryPlan plan;
  for (const auto& row : unfinished) {
    auto state = parseTaskState(row.state);
    std::string was = state == TaskState::Running ? "running" : "waiting in its queue";
    auto endIt = [&](std::string why) { plan.end.push_back({row, std::move(why)}); };
    if (pinedRestarted) {
      // The grants and answers it ran under are gone with pined's last run: the owner starts it again.
      endIt("pine restarted while this task was " + was + "; it was not resumed (send it again)");
      continue;
    }
    if (!config.agents.count(row.agent)) {
      endIt("the broker restarted while this task was " + was + ", and agent '" + row.agent +
            "' is no longer configured");
      continue;
    }
    if (!row.parent.empty() && state == TaskState::Running) {
      // The run that waited for its answer is gone; it is told when it resumes (its call's outcome is unknown).
      endIt("the broker restarted while this task was running; a delegated task or sub-agent is not resumed: the "
            "task that asked for it is told");
      continue;
    }
    if (state == TaskState::Running && row.attempt >= kMaxResumes) {
      endIt("the broker restarted " + std::to_string(row.attempt + 1) +
            " times while this task ran; it was not resumed again");
      continue;
    }
    auto request = requestFromRow(row);
    if (!request) {
      endIt("the broker restarted while this task was " + was + ", and what started it was not stored");
      continue;
    }
    std::string note;
    if (state == TaskState::Running) {
      auto steps = store.steps(row.id);
      std::vector<store::ApprovalRow> waiting;
      for (auto& a : store.approvalsOfTask(row.id)) {
        if (a.state == toString(ApprovalState::Cancelled)) continue;
        bool used = false;
        for (auto& s : steps) used |= s.approvalId == a.id;
        if (!used) waiting.push_back(a);
      }
      // The attempt the resumed run will be: everything journalled so far is from before it.
      note = TaskJournal::resumeNote(steps, row.attempt + 1, waiting);
      if (note.empty())
        note = "[pine] This task was interrupted: pine's broker restarted while it ran, and it was resumed (attempt " +
               std::to_string(row.attempt + 2) + "). Its journal holds no call that changed anything.";
    }
    plan.resume.push_back({row, *request, note});
  }
  return plan;
}

RecoveryPlan recoverTasks(store::Store& store, Approvals& approvals, TaskQueue& queue, const config::Home& config,
                          bool pinedRestarted) {
  // Whatever a worker was carrying out when the broker went down was cut off: outcome unknown.
  long long cut = store.interruptPendingSteps(nowMs());
  if (cut) spdlog::warn("{} tool call(s) were cut off by the broker's restart; their outcome is unknown", cut);
  approvals.expireOverdue();
  auto plan = planRecovery(store.unfinishedTasks(), pinedRestarted, config, store);
  for (auto& e : plan.end) queue.endStored(e.row, e.why);
  for (auto& r : plan.resume) queue.restore(r.row, r.request, r.note);
  if (!plan.resume.empty() || !plan.end.empty())
    spdlog::info("after the restart: {} task(s) resumed, {} ended", plan.resume.size(), plan.end.size());
  return plan;
}

}  // namespace pine
