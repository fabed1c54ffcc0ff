// Sources' memory between looks and their status lines (schema v6).
#include <cctype>

#include "broker/store/checks.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

namespace {

// Layer 5: agents read status lines without the mark outside content gets, so what a source
// found is kept only when it cannot carry an instruction: a number, or one word of at most 32
// ASCII letters, digits, '-' and '_'.
bool numberOrWord(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  bool word = true, alnum = false;
  for (char c : s) {
    alnum = alnum || std::isalnum((unsigned char)c);
    word = word && (std::isalnum((unsigned char)c) || c == '-' || c == '_');
  }
  if (word && alnum) return true;
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  bool digits = false, dot = false;
  for (; i < s.size(); ++i) {
    if (std::isdigit((unsigned char)s[i])) digits = true;
    else if (s[i] == '.' && !dot) dot = true;
    else return false;
  }
  return digits;
}

SourceStatusRow readStatus(const Stmt& st) {
  SourceStatusRow r;
  r.source = st.text(0);
  r.lookedMs = st.i64(1);
  r.found = st.text(2);
  r.eventMs = st.i64(3);
  r.events = st.i64(4);
  r.errors = st.i64(5);
  r.errorMs = st.i64(6);
  r.error = st.text(7);
  return r;
}

#define STATUS_COLUMNS "SELECT source, looked_ms, found, event_ms, events, errors, error_ms, error FROM source_status"

}  // namespace

std::optional<std::string> Store::sourceState(const std::string& source, const std::string& key) const {
  auto st = db_->prepare("SELECT value FROM source_state WHERE source = ?1 AND key = ?2", "reading a source's memory");
  st.bind(1, source).bind(2, key);
  if (!st.step()) return std::nullopt;
  return st.text(0);
}

std::map<std::string, std::string> Store::sourceStates(const std::string& source) const {
  auto st = db_->prepare("SELECT key, value FROM source_state WHERE source = ?1 ORDER BY key", "reading a source's memory");
  st.bind(1, source);
  std::map<std::string, std::string> out;
  while (st.step()) out[st.text(0)] = st.text(1);
  return out;
}

void Store::putSourceState(const std::string& source, const std::string& key, const std::string& value, long long nowMs) {
  requireNonEmpty(source, "source state source");
  requireNonEmpty(key, "source state key");
  auto st = db_->prepare(
      "INSERT INTO source_state (source, key, value, updated_ms) VALUES (?1, ?2, ?3, ?4) "
      "ON CONFLICT (source, key) DO UPDATE SET value = excluded.value, updated_ms = excluded.updated_ms",
      "remembering a source's state");
  st.bind(1, source).bind(2, key).bind(3, value).bind(4, nowMs);
  st.run();
}

void Store::putSourceStates(const std::string& source, const std::map<std::string, std::string>& values, long long nowMs) {
  Tx tx(*db_, "remembering a source's state");
  for (auto& [key, value] : values) putSourceState(source, key, value, nowMs);
  tx.commit();
}

bool Store::removeSourceState(const std::string& source, const std::string& key) {
  auto st = db_->prepare("DELETE FROM source_state WHERE source = ?1 AND key = ?2", "forgetting a source's state");
  st.bind(1, source).bind(2, key);
  st.run();
  return db_->changes() > 0;
}

void Store::noteSourceLook(const std::string& source, long long nowMs, const std::string& found) {
  requireNonEmpty(source, "source status source");
  auto st = db_->prepare(
      "INSERT INTO source_status (source, looked_ms, found) VALUES (?1, ?2, ?3) "
      "ON CONFLICT (source) DO UPDATE SET looked_ms = excluded.looked_ms, found = excluded.found",
      "noting a source's look");
  st.bind(1, source).bind(2, nowMs).bind(3, numberOrWord(found) ? found : std::string());
  st.run();
}

void Store::noteSourceEvents(const std::string& source, long long nowMs, long long count) {
  requireNonEmpty(source, "source status source");
  auto st = db_->prepare(
      "INSERT INTO source_status (source, event_ms, events) VALUES (?1, ?2, ?3) "
      "ON CONFLICT (source) DO UPDATE SET event_ms = excluded.event_ms, events = events + excluded.events",
      "counting a source's events");
  st.bind(1, source).bind(2, nowMs).bind(3, count);
  st.run();
}

void Store::saveSourceCounts(const std::map<std::string, SourceCount>& counts, long long countedSeq) {
  Tx tx(*db_, "saving the sources' event counts");
  for (const auto& [source, c] : counts) noteSourceEvents(source, c.lastMs, c.events);
  auto st = db_->prepare("INSERT INTO source_counts (id, counted_seq) VALUES (1, ?1) "
                         "ON CONFLICT (id) DO UPDATE SET counted_seq = max(counted_seq, excluded.counted_seq)",
                         "saving how far the sources' counts reach");
  st.bind(1, countedSeq);
  st.run();
  tx.commit();
}

long long Store::sourceCountsSeq() const {
  auto st = db_->prepare("SELECT counted_seq FROM source_counts WHERE id = 1", "reading how far the sources' counts reach");
  return st.step() ? st.i64(0) : 0;
}

std::vector<Store::SourceEventsAfter> Store::sourceEventsAfter(long long seq) const {
  // A range of the primary key: only what came after the last save is read.
  auto st = db_->prepare("SELECT source, count(*), max(time_ms), max(seq) FROM events WHERE seq > ?1 GROUP BY source",
                         "counting the sources' events after a seq");
  st.bind(1, seq);
  std::vector<SourceEventsAfter> out;
  while (st.step()) out.push_back({st.text(0), st.i64(1), st.i64(2), st.i64(3)});
  return out;
}

void Store::noteSourceError(const std::string& source, long long nowMs, const std::string& error) {
  requireNonEmpty(source, "source status source");
  auto st = db_->prepare(
      "INSERT INTO source_status (source, errors, error_ms, error) VALUES (?1, 1, ?2, ?3) "
      "ON CONFLICT (source) DO UPDATE SET errors = errors + 1, error_ms = excluded.error_ms, error = excluded.error",
      "noting a source's error");
  st.bind(1, source).bind(2, nowMs).bind(3, error);
  st.run();
}

std::optional<SourceStatusRow> Store::sourceStatus(const std::string& source) const {
  auto st = db_->prepare(STATUS_COLUMNS " WHERE source = ?1", "reading a source's status");
  st.bind(1, source);
  if (!st.step()) return std::nullopt;
  return readStatus(st);
}

std::vector<SourceStatusRow> Store::sourceStatuses() const {
  auto st = db_->prepare(STATUS_COLUMNS " ORDER BY source", "reading the sources' status");
  std::vector<SourceStatusRow> out;
  while (st.step()) out.push_back(readStatus(st));
  return out;
}

std::vector<std::string> Store::rememberedSources() const {
  auto st = db_->prepare("SELECT source FROM source_state UNION SELECT source FROM source_status ORDER BY 1",
                         "reading which sources are remembered");
  std::vector<std::string> out;
  while (st.step()) out.push_back(st.text(0));
  return out;
}

namespace {

long long deleteBySource(Db& db, const std::string& source, std::initializer_list<const char*> statements) {
  Tx tx(db, "forgetting a source");
  long long n = 0;
  for (const char* sql : statements) {
    auto st = db.prepare(sql, "forgetting a source");
    st.bind(1, source);
    st.run();
    n += db.changes();
  }
  tx.commit();
  return n;
}

}  // namespace

long long Store::forgetSource(const std::string& source) {
  return deleteBySource(*db_, source, {"DELETE FROM source_state WHERE source = ?1", "DELETE FROM source_status WHERE source = ?1"});
}

long long Store::forgetSourceState(const std::string& source) {
  return deleteBySource(*db_, source, {"DELETE FROM source_state WHERE source = ?1"});
}

}  // namespace pine::store
