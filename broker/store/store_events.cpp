// The event log: batches appended in one transaction, queries filtered in SQL.
#include <algorithm>
#include <string_view>
#include <vector>

#include "broker/store/checks.h"
#include "broker/store/json_text.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

namespace {

constexpr const char* kColumns = "SELECT seq, id, topic, time_ms, source, trust, payload, hops, origin FROM events";

Event readEvent(const Stmt& st) {
  Event e;
  e.seq = st.i64(0);
  e.id = st.text(1);
  e.topic = st.text(2);
  e.timeMs = st.i64(3);
  e.source = st.text(4);
  e.trust = st.text(5);
  e.payload = st.text(6);
  e.hops = st.i32(7);
  e.origin = st.text(8);
  return e;
}

void checkEvent(const Event& e) {
  // The usual case first, without building the messages below.
  if (!e.id.empty() && !e.topic.empty() && (e.trust == "owner" || e.trust == "untrusted") && e.hops >= 0 &&
      isJson(e.payload))
    return;
  requireNonEmpty(e.id, "event id");
  std::string what = "event '" + e.id + "': ";
  requireNonEmpty(e.topic, what + "topic");
  requireOneOf(e.trust, {"owner", "untrusted"}, what + "trust");
  requireJson(e.payload, what + "payload");
  if (e.hops < 0) throw StoreError(what + "hops is negative; pass 0 for an event nobody forwarded");
}

}  // namespace

void Store::appendEvents(std::vector<Event>& batch) {
  if (batch.empty()) return;
  // Everything is checked before the transaction: a bad event costs no write.
  for (const auto& e : batch) checkEvent(e);
  if (batch.size() > 1) {
    std::vector<std::string_view> ids;  // sorted, so that a repeated id is next to itself
    ids.reserve(batch.size());
    for (const auto& e : batch) ids.emplace_back(e.id);
    std::sort(ids.begin(), ids.end());
    auto twice = std::adjacent_find(ids.begin(), ids.end());
    if (twice != ids.end())
      throw StoreError("event id '" + std::string(*twice) + "' appears twice in one batch; nothing of the batch was stored");
  }
  std::vector<long long> seqs;
  seqs.reserve(batch.size());
  Tx tx(*db_, "appending events");
  // One statement for the batch, its text bound in place (the batch outlives each step).
  auto st = db_->prepare(
      "INSERT INTO events (id, topic, time_ms, source, trust, payload, hops, origin) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
      "?7, ?8)",
      "appending an event");
  for (const auto& e : batch) {
    st.reset();
    st.bindKept(1, e.id).bindKept(2, e.topic).bind(3, e.timeMs).bindKept(4, e.source).bindKept(5, e.trust);
    st.bindKept(6, e.payload).bind(7, e.hops).bindKept(8, e.origin);
    int rc = st.stepCode();
    if ((rc & 0xff) == SQLITE_CONSTRAINT)
      throw StoreError("event id '" + e.id + "' is already stored in " + db_->path() +
                       "; nothing of the batch was stored (event ids must be unique)");
    if (rc != SQLITE_DONE) db_->fail(rc, "appending event '" + e.id + "'");
    seqs.push_back(db_->lastRowid());
  }
  tx.commit();
  // Only now: a caller never sees a seq that was not committed.
  for (size_t i = 0; i < batch.size(); ++i) batch[i].seq = seqs[i];
}

std::vector<Event> Store::events(const EventQuery& q) const {
  // Only the filters in use go into the SQL, so the planner can pick the right index; each
  // combination is its own cached statement.
  std::string sql = kColumns;
  std::string where;
  auto add = [&](const char* clause) { where += (where.empty() ? " WHERE " : " AND ") + std::string(clause); };
  auto end = prefixEnd(q.topicPrefix);
  if (q.afterSeq > 0) add("seq > ?1");
  if (q.sinceMs > 0) add("time_ms >= ?2");
  if (!q.topicPrefix.empty()) add("topic >= ?3");
  if (end) add("topic < ?4");
  if (!q.source.empty()) add("source = ?5");
  if (!q.trust.empty()) add("trust = ?6");
  sql += where + (q.newestFirst ? " ORDER BY seq DESC" : " ORDER BY seq") + " LIMIT ?7";
  auto st = db_->prepare(sql.c_str(), "reading events");
  if (q.afterSeq > 0) st.bind(1, q.afterSeq);
  if (q.sinceMs > 0) st.bind(2, q.sinceMs);
  if (!q.topicPrefix.empty()) st.bind(3, q.topicPrefix);
  if (end) st.bind(4, *end);
  if (!q.source.empty()) st.bind(5, q.source);
  if (!q.trust.empty()) st.bind(6, q.trust);
  st.bind(7, clampLimit(q.limit));
  std::vector<Event> out;
  while (st.step()) out.push_back(readEvent(st));
  return out;
}

std::optional<Event> Store::event(const std::string& id) const {
  auto st = db_->prepare("SELECT seq, id, topic, time_ms, source, trust, payload, hops, origin FROM events WHERE id = ?1",
                         "reading an event");
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  return readEvent(st);
}

}  // namespace pine::store
