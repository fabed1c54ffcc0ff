// Usage and cost (schema v10): what model calls add to a task, and the sums pinectl usage and
// the budget checks read. A day is the machine's local day: SQLite's 'localtime' and the
// budget's start of today (mktime) read the same time zone of this process.
#include "broker/store/checks.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

namespace {

// The sums of usage columns, as the first six columns of a query.
#define USAGE_SUMS                                                                                      \
  "coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0), coalesce(sum(cache_read), 0), "           \
  "coalesce(sum(cache_write), 0), total(cost), coalesce(sum(unpriced_tokens), 0)"
// ?1: agent ("" every agent), ?2: created at or after (ms).
#define USAGE_FILTER " FROM tasks WHERE (?1 = '' OR agent = ?1) AND created_ms >= ?2"

Usage readSums(const Stmt& st, int first) {
  Usage u;
  u.tokensIn = st.i64(first);
  u.tokensOut = st.i64(first + 1);
  u.cacheRead = st.i64(first + 2);
  u.cacheWrite = st.i64(first + 3);
  u.cost = st.f64(first + 4);
  u.unpricedTokens = st.i64(first + 5);
  return u;
}

}  // namespace

void Store::addTaskUsage(const std::string& id, const Usage& u) {
  requireUsage(u, "task '" + id + "': usage");
  auto st = db_->prepare(
      "UPDATE tasks SET tokens_in = tokens_in + ?2, tokens_out = tokens_out + ?3, cache_read = cache_read + ?4, "
      "cache_write = cache_write + ?5, cost = cost + ?6, unpriced_tokens = unpriced_tokens + ?7 WHERE id = ?1",
      "adding to a task's usage");
  st.bind(1, id).bind(2, u.tokensIn).bind(3, u.tokensOut).bind(4, u.cacheRead).bind(5, u.cacheWrite);
  st.bind(6, u.cost).bind(7, u.unpricedTokens);
  st.run();
}

Usage Store::usageSince(const std::string& agent, long long sinceMs) const {
  auto st = db_->prepare("SELECT " USAGE_SUMS USAGE_FILTER, "summing usage");
  st.bind(1, agent).bind(2, sinceMs);
  return st.step() ? readSums(st, 0) : Usage{};
}

std::vector<UsageGroup> Store::usageByAgent(const std::string& agent, long long sinceMs) const {
  auto st = db_->prepare("SELECT agent, count(*), " USAGE_SUMS USAGE_FILTER " GROUP BY agent ORDER BY agent",
                         "summing usage by agent");
  st.bind(1, agent).bind(2, sinceMs);
  std::vector<UsageGroup> out;
  while (st.step()) out.push_back({st.text(0), "", st.i64(1), readSums(st, 2)});
  return out;
}

std::vector<UsageGroup> Store::usageByDay(const std::string& agent, long long sinceMs) const {
  auto st = db_->prepare("SELECT agent, date(created_ms / 1000, 'unixepoch', 'localtime') AS day, count(*), " USAGE_SUMS
                             USAGE_FILTER " GROUP BY day, agent ORDER BY day DESC, agent",
                         "summing usage by day");
  st.bind(1, agent).bind(2, sinceMs);
  std::vector<UsageGroup> out;
  while (st.step()) out.push_back({st.text(0), st.text(1), st.i64(2), readSums(st, 3)});
  return out;
}

std::vector<UsageTask> Store::usageByTask(const std::string& agent, long long sinceMs, int limit) const {
  auto st = db_->prepare(
      "SELECT id, agent, session, state, created_ms, tokens_in, tokens_out, cache_read, cache_write, cost, "
      "unpriced_tokens" USAGE_FILTER
      " AND (tokens_in + tokens_out + cache_read + cache_write > 0 OR cost > 0) ORDER BY created_ms DESC, rowid DESC "
      "LIMIT ?3",
      "listing tasks' usage");
  st.bind(1, agent).bind(2, sinceMs).bind(3, clampLimit(limit));
  std::vector<UsageTask> out;
  while (st.step()) out.push_back({st.text(0), st.text(1), st.text(2), st.text(3), st.i64(4), readSums(st, 5)});
  return out;
}

long long Store::tasksWithUsage(const std::string& agent, long long sinceMs) const {
  auto st = db_->prepare("SELECT count(*)" USAGE_FILTER
                         " AND (tokens_in + tokens_out + cache_read + cache_write > 0 OR cost > 0)",
                         "counting tasks with usage");
  st.bind(1, agent).bind(2, sinceMs);
  return st.step() ? st.i64(0) : 0;
}

double Store::costliestTask(const std::string& agent, long long sinceMs) const {
  auto st = db_->prepare("SELECT coalesce(max(cost), 0)" USAGE_FILTER, "finding the costliest task");
  st.bind(1, agent).bind(2, sinceMs);
  return st.step() ? st.f64(0) : 0;
}

}  // namespace pine::store
