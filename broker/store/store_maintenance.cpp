// Retention and secret removal: the two ways stored text leaves the database.
#include <optional>

#include "broker/store/background_checkpoints.h"
#include "broker/store/json_text.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

PurgeCounts Store::purgeOlderThan(long long cutoffMs) {
  PurgeCounts n;
  Tx tx(*db_, "purging old rows");
  auto run = [&](const char* sql, const char* what) {
    auto st = db_->prepare(sql, what);
    st.bind(1, cutoffMs);
    st.run();
    return db_->changes();
  };
  n.events = run("DELETE FROM events WHERE time_ms < ?1", "purging old events");
  // A task or approval without an end time counts from its creation.
  n.tasks = run(
      "DELETE FROM tasks WHERE state IN ('done', 'failed', 'refused') "
      "AND (CASE WHEN ended_ms > 0 THEN ended_ms ELSE created_ms END) < ?1",
      "purging ended tasks");
  n.approvals = run(
      "DELETE FROM approvals WHERE state <> 'pending' "
      "AND (CASE WHEN decided_ms > 0 THEN decided_ms ELSE created_ms END) < ?1",
      "purging decided approvals");
  n.messages = run(
      "DELETE FROM messages WHERE (agent, session) IN (SELECT agent, session FROM sessions WHERE updated_ms < ?1)",
      "purging messages of idle sessions");
  tx.commit();
  return n;
}

namespace {

// One text column of one table, walked by rowid in pages so that no statement reads the
// table while another one writes it.
long long rewriteColumn(Db& db, const std::string& table, const std::string& column, bool json, const TextFn& fn) {
  std::string select = "SELECT rowid, " + column + " FROM " + table + " WHERE rowid > ?1 ORDER BY rowid LIMIT 500";
  std::string update = "UPDATE " + table + " SET " + column + " = ?2 WHERE rowid = ?1";
  std::string what = "rewriting " + table + "." + column;
  long long changed = 0, after = 0;
  for (;;) {
    std::vector<std::pair<long long, std::string>> page;
    {
      auto st = db.prepare(select.c_str(), what.c_str());
      st.bind(1, after);
      while (st.step()) page.emplace_back(st.i64(0), st.text(1));
    }
    if (page.empty()) break;
    after = page.back().first;
    for (auto& [rowid, text] : page) {
      std::string out = json ? rewriteJson(text, fn) : fn(text);
      if (out == text) continue;
      auto st = db.prepare(update.c_str(), what.c_str());
      st.bind(1, rowid).bind(2, out);
      st.run();
      ++changed;
    }
  }
  return changed;
}

}  // namespace

long long Store::rewriteText(const std::function<std::string(const std::string&)>& fn) {
  struct Column {
    const char* table;
    const char* column;
    bool json;
  };
  static const Column columns[] = {
      {"events", "payload", true},  {"tasks", "text", false},     {"tasks", "answer", false},
      {"tasks", "error", false},    {"messages", "content", true}, {"approvals", "args", true},
      {"approvals", "reason", false}, {"state", "value", true}, {"task_steps", "args", true},
      {"task_steps", "result", false},
  };
  long long changed = 0;
  {
    Tx tx(*db_, "rewriting stored text");
    for (const auto& c : columns) changed += rewriteColumn(*db_, c.table, c.column, c.json, fn);
    tx.commit();
  }
  if (changed > 0) {
    // The old pages are still in the WAL until a checkpoint: copy them home and cut the WAL
    // to zero bytes, so the secret is in neither file.
    // Not beside a background checkpoint, which would make this one give up (SQLITE_BUSY).
    std::optional<detail::BackgroundCheckpoints::Pause> pause;
    if (checkpoints_) pause.emplace(*checkpoints_);
    auto st = db_->prepare("PRAGMA wal_checkpoint(TRUNCATE)", "checkpointing after a rewrite");
    st.run();
  }
  return changed;
}

}  // namespace pine::store
