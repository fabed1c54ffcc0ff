// Conversations: the session row (taint, mode, opened folder), its messages and its grants.
#include "broker/store/checks.h"
#include "broker/store/json_text.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

namespace {

#define SESSION_COLUMNS                                                                                         \
  "SELECT agent, session, tainted, taint_reason, mode_override, bypass_anyway, created_ms, updated_ms FROM " \
  "sessions"

SessionRow readSession(const Stmt& st) {
  SessionRow s;
  s.agent = st.text(0);
  s.session = st.text(1);
  s.tainted = st.flag(2);
  s.taintReason = st.text(3);
  s.modeOverride = st.text(4);
  s.bypassAnyway = st.flag(5);
  s.createdMs = st.i64(6);
  s.updatedMs = st.i64(7);
  return s;
}

void checkSessionKey(const std::string& agent, const std::string& session, const std::string& what) {
  requireNonEmpty(agent, what + ": agent");
  requireNonEmpty(session, what + ": session");
}

// Messages and grants belong to a session row (foreign key); make it when it is missing
// and move its updatedMs forward, which is what retention looks at.
void ensureSession(Db& db, const std::string& agent, const std::string& session, long long nowMs) {
  auto st = db.prepare(
      "INSERT INTO sessions (agent, session, created_ms, updated_ms) VALUES (?1, ?2, ?3, ?3) "
      "ON CONFLICT (agent, session) DO UPDATE SET updated_ms = max(updated_ms, excluded.updated_ms)",
      "creating a session");
  st.bind(1, agent).bind(2, session).bind(3, nowMs);
  st.run();
}

}  // namespace

std::optional<SessionRow> Store::session(const std::string& agent, const std::string& session) const {
  auto st = db_->prepare(SESSION_COLUMNS " WHERE agent = ?1 AND session = ?2", "reading a session");
  st.bind(1, agent).bind(2, session);
  if (!st.step()) return std::nullopt;
  return readSession(st);
}

void Store::putSession(const SessionRow& s) {
  checkSessionKey(s.agent, s.session, "session");
  // In place: INSERT OR REPLACE would delete the row and, through the foreign keys, its
  // messages and grants.
  auto st = db_->prepare(
      "INSERT INTO sessions (agent, session, tainted, taint_reason, mode_override, bypass_anyway, created_ms, "
      "updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (agent, session) DO UPDATE SET "
      "tainted = excluded.tainted, taint_reason = excluded.taint_reason, mode_override = excluded.mode_override, "
      "bypass_anyway = excluded.bypass_anyway, created_ms = excluded.created_ms, updated_ms = excluded.updated_ms",
      "storing a session");
  st.bind(1, s.agent).bind(2, s.session).bind(3, s.tainted).bind(4, s.taintReason).bind(5, s.modeOverride);
  st.bind(6, s.bypassAnyway).bind(7, s.createdMs).bind(8, s.updatedMs);
  st.run();
}

std::vector<SessionRow> Store::sessions(const std::string& agent) const {
  auto st = db_->prepare(SESSION_COLUMNS " WHERE agent = ?1 ORDER BY updated_ms DESC, session", "listing sessions");
  st.bind(1, agent);
  std::vector<SessionRow> out;
  while (st.step()) out.push_back(readSession(st));
  return out;
}

void Store::resetSession(const std::string& agent, const std::string& session) {
  Tx tx(*db_, "resetting a session");
  auto m = db_->prepare("DELETE FROM messages WHERE agent = ?1 AND session = ?2", "deleting a session's messages");
  m.bind(1, agent).bind(2, session);
  m.run();
  auto g = db_->prepare("DELETE FROM grants WHERE agent = ?1 AND session = ?2", "deleting a session's grants");
  g.bind(1, agent).bind(2, session);
  g.run();
  auto s = db_->prepare(
      "UPDATE sessions SET tainted = 0, taint_reason = '', mode_override = '', bypass_anyway = 0, folder = '' "
      "WHERE agent = ?1 AND session = ?2",
      "clearing a session's taint and mode");
  s.bind(1, agent).bind(2, session);
  s.run();
  tx.commit();
}

std::string Store::sessionFolder(const std::string& agent, const std::string& session) const {
  auto st = db_->prepare("SELECT folder FROM sessions WHERE agent = ?1 AND session = ?2", "reading a session's folder");
  st.bind(1, agent).bind(2, session);
  return st.step() ? st.text(0) : "";
}

void Store::setSessionFolder(const std::string& agent, const std::string& session, const std::string& folder,
                             long long nowMs) {
  checkSessionKey(agent, session, "session folder");
  Tx tx(*db_, "opening a folder for a session");
  ensureSession(*db_, agent, session, nowMs);
  auto st = db_->prepare("UPDATE sessions SET folder = ?3 WHERE agent = ?1 AND session = ?2", "storing a session's folder");
  st.bind(1, agent).bind(2, session).bind(3, folder);
  st.run();
  tx.commit();
}

void Store::appendMessages(const std::vector<MessageRow>& rows) {
  for (const auto& r : rows) {
    checkSessionKey(r.agent, r.session, "message");
    std::string what = "message of " + r.agent + "/" + r.session + ": ";
    requireOneOf(r.role, {"user", "assistant", "tool", "event", "note"}, what + "role");
    requireJson(r.content, what + "content");
  }
  if (rows.empty()) return;
  Tx tx(*db_, "appending messages");
  for (const auto& r : rows) {
    ensureSession(*db_, r.agent, r.session, r.timeMs);
    auto st = db_->prepare(
        "INSERT INTO messages (agent, session, task_id, role, content, time_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        "appending a message");
    st.bind(1, r.agent).bind(2, r.session).bind(3, r.taskId).bind(4, r.role).bind(5, r.content).bind(6, r.timeMs);
    st.run();
  }
  tx.commit();
}

std::vector<MessageRow> Store::messages(const std::string& agent, const std::string& session, int limit) const {
  // The newest `limit` by the index, then turned back to oldest first.
  auto st = db_->prepare(
      "SELECT * FROM (SELECT seq, agent, session, task_id, role, content, time_ms FROM messages "
      "WHERE agent = ?1 AND session = ?2 ORDER BY seq DESC LIMIT ?3) ORDER BY seq",
      "reading messages");
  st.bind(1, agent).bind(2, session).bind(3, clampLimit(limit));
  std::vector<MessageRow> out;
  while (st.step()) {
    MessageRow m;
    m.seq = st.i64(0);
    m.agent = st.text(1);
    m.session = st.text(2);
    m.taskId = st.text(3);
    m.role = st.text(4);
    m.content = st.text(5);
    m.timeMs = st.i64(6);
    out.push_back(std::move(m));
  }
  return out;
}

void Store::addGrant(const GrantRow& g) {
  checkSessionKey(g.agent, g.session, "grant");
  requireOneOf(g.kind, {"always", "read", "write", "network"}, "grant for " + g.agent + "/" + g.session + ": kind");
  requireNonEmpty(g.value, "grant for " + g.agent + "/" + g.session + ": value");
  Tx tx(*db_, "adding a grant");
  ensureSession(*db_, g.agent, g.session, g.createdMs);
  auto st = db_->prepare(
      "INSERT INTO grants (agent, session, kind, value, while_tainted, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
      "ON CONFLICT (agent, session, kind, value) DO UPDATE SET "
      "while_tainted = max(while_tainted, excluded.while_tainted)",
      "adding a grant");
  st.bind(1, g.agent).bind(2, g.session).bind(3, g.kind).bind(4, g.value).bind(5, g.whileTainted);
  st.bind(6, g.createdMs);
  st.run();
  tx.commit();
}

std::vector<GrantRow> Store::grants(const std::string& agent, const std::string& session) const {
  auto st = db_->prepare(
      "SELECT agent, session, kind, value, while_tainted, created_ms FROM grants WHERE agent = ?1 AND session = ?2 "
      "ORDER BY kind, value",
      "reading grants");
  st.bind(1, agent).bind(2, session);
  std::vector<GrantRow> out;
  while (st.step()) {
    GrantRow g;
    g.agent = st.text(0);
    g.session = st.text(1);
    g.kind = st.text(2);
    g.value = st.text(3);
    g.whileTainted = st.flag(4);
    g.createdMs = st.i64(5);
    out.push_back(std::move(g));
  }
  return out;
}

long long Store::removeAllGrants() {
  db_->prepare("DELETE FROM grants", "removing all grants").run();
  return db_->changes();
}

}  // namespace pine::store
