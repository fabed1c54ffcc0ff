// Tasks: what ran, for whom, with what answer and usage (the sums of usage: store_usage.cpp).
#include "broker/store/checks.h"
#include "broker/store/json_text.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

namespace {

#define TASK_COLUMNS                                                                                               \
  "SELECT id, agent, session, text, trust, state, answer, error, parent, event_id, depth, created_ms, started_ms, " \
  "ended_ms, tokens_in, tokens_out, cost, origin, request, attempt, cache_read, cache_write, unpriced_tokens FROM tasks"

TaskRow readTask(const Stmt& st) {
  TaskRow t;
  t.id = st.text(0);
  t.agent = st.text(1);
  t.session = st.text(2);
  t.text = st.text(3);
  t.trust = st.text(4);
  t.state = st.text(5);
  t.answer = st.text(6);
  t.error = st.text(7);
  t.parent = st.text(8);
  t.eventId = st.text(9);
  t.depth = st.i32(10);
  t.createdMs = st.i64(11);
  t.startedMs = st.i64(12);
  t.endedMs = st.i64(13);
  t.usage.tokensIn = st.i64(14);
  t.usage.tokensOut = st.i64(15);
  t.usage.cost = st.f64(16);
  t.origin = st.text(17);
  t.request = st.text(18);
  t.attempt = st.i32(19);
  t.usage.cacheRead = st.i64(20);
  t.usage.cacheWrite = st.i64(21);
  t.usage.unpricedTokens = st.i64(22);
  return t;
}

std::vector<TaskRow> readTasks(Stmt& st) {
  std::vector<TaskRow> out;
  while (st.step()) out.push_back(readTask(st));
  return out;
}

}  // namespace

void Store::putTask(const TaskRow& t) {
  requireNonEmpty(t.id, "task id");
  std::string what = "task '" + t.id + "': ";
  requireNonEmpty(t.agent, what + "agent");
  requireOneOf(t.trust, {"owner", "untrusted"}, what + "trust");
  requireOneOf(t.state, {"queued", "running", "done", "failed", "refused"}, what + "state");
  requireJson(t.request, what + "request");
  if (t.attempt < 0) throw StoreError(what + "attempt " + std::to_string(t.attempt) + " is negative");
  requireUsage(t.usage, what + "usage");
  // An upsert, not INSERT OR REPLACE: the row is updated in place, never deleted and re-made
  // (which would also delete its journal through the foreign key).
  auto st = db_->prepare(
      "INSERT INTO tasks (id, agent, session, text, trust, state, answer, error, parent, event_id, depth, created_ms, "
      "started_ms, ended_ms, tokens_in, tokens_out, cost, origin, request, attempt, cache_read, cache_write, "
      "unpriced_tokens) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, "
      "?20, ?21, ?22, ?23) ON CONFLICT (id) DO UPDATE SET "
      "agent = excluded.agent, session = excluded.session, "
      "text = excluded.text, trust = excluded.trust, state = excluded.state, answer = excluded.answer, "
      "error = excluded.error, parent = excluded.parent, event_id = excluded.event_id, depth = excluded.depth, "
      "created_ms = excluded.created_ms, started_ms = excluded.started_ms, ended_ms = excluded.ended_ms, "
      "tokens_in = excluded.tokens_in, tokens_out = excluded.tokens_out, cost = excluded.cost, "
      "origin = excluded.origin, request = excluded.request, attempt = excluded.attempt, "
      "cache_read = excluded.cache_read, cache_write = excluded.cache_write, unpriced_tokens = excluded.unpriced_tokens",
      "storing a task");
  st.bind(1, t.id).bind(2, t.agent).bind(3, t.session).bind(4, t.text).bind(5, t.trust).bind(6, t.state);
  st.bind(7, t.answer).bind(8, t.error).bind(9, t.parent).bind(10, t.eventId).bind(11, t.depth);
  st.bind(12, t.createdMs).bind(13, t.startedMs).bind(14, t.endedMs);
  st.bind(15, t.usage.tokensIn).bind(16, t.usage.tokensOut).bind(17, t.usage.cost);
  st.bind(18, t.origin).bind(19, t.request).bind(20, t.attempt);
  st.bind(21, t.usage.cacheRead).bind(22, t.usage.cacheWrite).bind(23, t.usage.unpricedTokens);
  st.run();
}

std::optional<TaskRow> Store::task(const std::string& id) const {
  auto st = db_->prepare(TASK_COLUMNS " WHERE id = ?1", "reading a task");
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  return readTask(st);
}

std::optional<TaskRow> Store::taskWithOrigin(const std::string& origin) const {
  auto st = db_->prepare(TASK_COLUMNS " WHERE origin = ?1 ORDER BY created_ms DESC LIMIT 1", "reading a task by origin");
  st.bind(1, origin);
  if (!st.step()) return std::nullopt;
  return readTask(st);
}

std::vector<TaskRow> Store::tasks(int limit, const std::string& agent, const std::string& state) const {
  const char* sql = agent.empty() && state.empty() ? TASK_COLUMNS " ORDER BY created_ms DESC, rowid DESC LIMIT ?3"
                    : state.empty()                ? TASK_COLUMNS
      " WHERE agent = ?1 ORDER BY created_ms DESC, rowid DESC LIMIT ?3"
                    : agent.empty()                ? TASK_COLUMNS
      " WHERE state = ?2 ORDER BY created_ms DESC, rowid DESC LIMIT ?3"
                                                   : TASK_COLUMNS
      " WHERE agent = ?1 AND state = ?2 ORDER BY created_ms DESC, rowid DESC LIMIT ?3";
  auto st = db_->prepare(sql, "listing tasks");
  if (!agent.empty()) st.bind(1, agent);
  if (!state.empty()) st.bind(2, state);
  st.bind(3, clampLimit(limit));
  return readTasks(st);
}

std::vector<TaskRow> Store::unfinishedTasks() const {
  auto st = db_->prepare(TASK_COLUMNS " WHERE state IN ('queued', 'running') ORDER BY created_ms, rowid",
                         "listing unfinished tasks");
  return readTasks(st);
}

}  // namespace pine::store
