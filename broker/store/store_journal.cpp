// The journal of a task's tool calls: each call recorded before it is carried out, then
// settled with its outcome, so that a run resumed after a crash of the broker is told what
// was done and what was cut off (the seeds' recovery journal).
#include "broker/store/checks.h"
#include "broker/store/json_text.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

namespace {

#define STEP_COLUMNS                                                                                              \
  "SELECT task_id, seq, attempt, tool, args, args_hash, side, state, result, approval_id, answered, started_ms, " \
  "ended_ms FROM task_steps"

StepRow readStep(const Stmt& st) {
  StepRow s;
  s.taskId = st.text(0);
  s.seq = st.i64(1);
  s.attempt = st.i32(2);
  s.tool = st.text(3);
  s.args = st.text(4);
  s.argsHash = st.text(5);
  s.side = st.text(6);
  s.state = st.text(7);
  s.result = st.text(8);
  s.approvalId = st.text(9);
  s.answered = st.flag(10);
  s.startedMs = st.i64(11);
  s.endedMs = st.i64(12);
  return s;
}

const std::initializer_list<const char*> kStepStates = {"pending", "done", "failed", "unknown"};

}  // namespace

long long Store::addStep(StepRow s) {
  requireNonEmpty(s.taskId, "journal step: task id");
  std::string what = "journal step of task '" + s.taskId + "': ";
  requireNonEmpty(s.tool, what + "tool");
  requireNonEmpty(s.argsHash, what + "argument hash");
  requireJson(s.args, what + "args");
  requireOneOf(s.side, {"worker", "broker"}, what + "side");
  if (s.state.empty()) s.state = "pending";
  requireOneOf(s.state, kStepStates, what + "state");
  Tx tx(*db_, "recording a journal step");
  {
    auto next = db_->prepare("SELECT coalesce(max(seq), 0) + 1 FROM task_steps WHERE task_id = ?1",
                             "numbering a journal step");
    next.bind(1, s.taskId);
    s.seq = next.step() ? next.i64(0) : 1;
  }
  auto st = db_->prepare(
      "INSERT INTO task_steps (task_id, seq, attempt, tool, args, args_hash, side, state, result, approval_id, "
      "answered, started_ms, ended_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
      "recording a journal step");
  st.bind(1, s.taskId).bind(2, s.seq).bind(3, s.attempt).bind(4, s.tool).bind(5, s.args).bind(6, s.argsHash);
  st.bind(7, s.side).bind(8, s.state).bind(9, s.result).bind(10, s.approvalId).bind(11, s.answered);
  st.bind(12, s.startedMs).bind(13, s.endedMs);
  int rc = st.stepCode();
  if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
    throw StoreError(what + "no such task in " + db_->path() + ": store the task before its journal");
  if (rc != SQLITE_DONE) db_->fail(rc, "recording a journal step");
  tx.commit();
  return s.seq;
}

bool Store::settleStep(const std::string& taskId, long long seq, const std::string& state, const std::string& result,
                       long long nowMs) {
  requireOneOf(state, {"done", "failed", "unknown"}, "settling journal step " + std::to_string(seq) + " of task '" +
                                                         taskId + "': state");
  auto st = db_->prepare(
      "UPDATE task_steps SET state = ?3, result = ?4, ended_ms = ?5 WHERE task_id = ?1 AND seq = ?2 AND "
      "state = 'pending'",
      "settling a journal step");
  st.bind(1, taskId).bind(2, seq).bind(3, state).bind(4, result).bind(5, nowMs);
  st.run();
  return db_->changes() == 1;
}

long long Store::settlePendingSteps(const std::string& taskId, const std::string& side, const std::string& state,
                                    long long nowMs) {
  requireOneOf(state, {"done", "failed", "unknown"}, "settling the journal of task '" + taskId + "': state");
  auto st = db_->prepare(
      "UPDATE task_steps SET state = ?3, ended_ms = ?4 WHERE task_id = ?1 AND side = ?2 AND state = 'pending'",
      "settling a task's pending steps");
  st.bind(1, taskId).bind(2, side).bind(3, state).bind(4, nowMs);
  st.run();
  return db_->changes();
}

long long Store::interruptPendingSteps(long long nowMs) {
  auto st = db_->prepare("UPDATE task_steps SET state = 'unknown', ended_ms = ?1 WHERE state = 'pending'",
                         "marking interrupted journal steps");
  st.bind(1, nowMs);
  st.run();
  return db_->changes();
}

void Store::markStepAnswered(const std::string& taskId, long long seq) {
  auto st = db_->prepare("UPDATE task_steps SET answered = 1 WHERE task_id = ?1 AND seq = ?2",
                         "marking a journal step answered");
  st.bind(1, taskId).bind(2, seq);
  st.run();
}

std::vector<StepRow> Store::steps(const std::string& taskId) const {
  auto st = db_->prepare(STEP_COLUMNS " WHERE task_id = ?1 ORDER BY seq", "reading a task's journal");
  st.bind(1, taskId);
  std::vector<StepRow> out;
  while (st.step()) out.push_back(readStep(st));
  return out;
}

}  // namespace pine::store
