// Approvals: what waits for the owner, and the one answer each gets.
#include "broker/store/checks.h"
#include "broker/store/json_text.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

namespace {

#define APPROVAL_COLUMNS                                                                                             \
  "SELECT id, agent, session, task_id, tool, args, reason, always_offered, always_scope, state, always, created_ms, " \
  "expires_ms, decided_ms, decided_by, tainted FROM approvals"

ApprovalRow readApproval(const Stmt& st) {
  ApprovalRow a;
  a.id = st.text(0);
  a.agent = st.text(1);
  a.session = st.text(2);
  a.taskId = st.text(3);
  a.tool = st.text(4);
  a.args = st.text(5);
  a.reason = st.text(6);
  a.alwaysOffered = st.flag(7);
  a.alwaysScope = st.text(8);
  a.state = st.text(9);
  a.always = st.flag(10);
  a.createdMs = st.i64(11);
  a.expiresMs = st.i64(12);
  a.decidedMs = st.i64(13);
  a.decidedBy = st.text(14);
  a.tainted = st.flag(15);
  return a;
}

}  // namespace

void Store::putApproval(const ApprovalRow& a) {
  requireNonEmpty(a.id, "approval id");
  std::string what = "approval '" + a.id + "': ";
  requireNonEmpty(a.agent, what + "agent");
  requireNonEmpty(a.tool, what + "tool");
  requireOneOf(a.state, {"pending", "approved", "denied", "timeout", "cancelled"}, what + "state");
  requireJson(a.args, what + "args");
  if (a.always && !a.alwaysOffered) throw StoreError(what + "'always' was not offered, so it cannot have been chosen");
  auto st = db_->prepare(
      "INSERT INTO approvals (id, agent, session, task_id, tool, args, reason, always_offered, always_scope, state, "
      "always, created_ms, expires_ms, decided_ms, decided_by, tainted) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
      "?10, ?11, ?12, ?13, ?14, ?15, ?16) ON CONFLICT (id) DO UPDATE SET agent = excluded.agent, "
      "session = excluded.session, task_id = excluded.task_id, tool = excluded.tool, args = excluded.args, "
      "reason = excluded.reason, always_offered = excluded.always_offered, always_scope = excluded.always_scope, "
      "state = excluded.state, always = excluded.always, created_ms = excluded.created_ms, "
      "expires_ms = excluded.expires_ms, decided_ms = excluded.decided_ms, decided_by = excluded.decided_by, "
      "tainted = excluded.tainted",
      "storing an approval");
  st.bind(1, a.id).bind(2, a.agent).bind(3, a.session).bind(4, a.taskId).bind(5, a.tool).bind(6, a.args);
  st.bind(7, a.reason).bind(8, a.alwaysOffered).bind(9, a.alwaysScope).bind(10, a.state).bind(11, a.always);
  st.bind(12, a.createdMs).bind(13, a.expiresMs).bind(14, a.decidedMs).bind(15, a.decidedBy).bind(16, a.tainted);
  st.run();
}

std::optional<ApprovalRow> Store::approval(const std::string& id) const {
  auto st = db_->prepare(APPROVAL_COLUMNS " WHERE id = ?1", "reading an approval");
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  return readApproval(st);
}

std::vector<ApprovalRow> Store::approvals(bool pendingOnly, int limit) const {
  auto st = db_->prepare(pendingOnly ? APPROVAL_COLUMNS " WHERE state = 'pending' ORDER BY created_ms, rowid LIMIT ?1"
                                     : APPROVAL_COLUMNS " ORDER BY created_ms DESC, rowid DESC LIMIT ?1",
                         "listing approvals");
  st.bind(1, clampLimit(limit));
  std::vector<ApprovalRow> out;
  while (st.step()) out.push_back(readApproval(st));
  return out;
}

std::vector<ApprovalRow> Store::approvalsOfTask(const std::string& taskId) const {
  auto st = db_->prepare(APPROVAL_COLUMNS " WHERE task_id = ?1 ORDER BY created_ms, rowid", "listing a task's approvals");
  st.bind(1, taskId);
  std::vector<ApprovalRow> out;
  while (st.step()) out.push_back(readApproval(st));
  return out;
}

bool Store::decideApproval(const std::string& id, const std::string& state, bool always, const std::string& by,
                           long long nowMs) {
  std::string what = "deciding approval '" + id + "': ";
  requireOneOf(state, {"approved", "denied", "timeout", "cancelled"}, what + "state");
  auto current = approval(id);
  if (!current || current->state != "pending") return false;
  if (always && state != "approved")
    throw StoreError(what + "'always' goes with approved only; pass always=false for " + state);
  if (always && !current->alwaysOffered)
    throw StoreError(what + "'always' was not offered for it (it asks every time); approve it once instead");
  // The state = 'pending' condition makes the first answer the only one, even if a caller
  // skipped the look-up above.
  auto st = db_->prepare(
      "UPDATE approvals SET state = ?2, always = ?3, decided_by = ?4, decided_ms = ?5 "
      "WHERE id = ?1 AND state = 'pending'",
      "deciding an approval");
  st.bind(1, id).bind(2, state).bind(3, always).bind(4, by).bind(5, nowMs);
  st.run();
  return db_->changes() == 1;
}

}  // namespace pine::store
