// Small tables: agents' state, subscriptions, schedules' last runs, pined's
// boot and the mode switches that last until it restarts.
#include "broker/store/checks.h"
#include "broker/store/json_text.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

namespace {

StateRow readState(const Stmt& st) {
  return StateRow{st.text(0), st.text(1), st.i64(2), st.text(3)};
}

#define SUBSCRIPTION_COLUMNS \
  "SELECT id, agent, session, source, topic, separate, throttle_sec, created_ms, last_delivered_ms FROM subscriptions"

SubscriptionRow readSubscription(const Stmt& st) {
  SubscriptionRow s;
  s.id = st.text(0);
  s.agent = st.text(1);
  s.session = st.text(2);
  s.source = st.text(3);
  s.topic = st.text(4);
  s.separate = st.flag(5);
  s.throttleSec = st.i32(6);
  s.createdMs = st.i64(7);
  s.lastDeliveredMs = st.i64(8);
  return s;
}

}  // namespace

std::optional<StateRow> Store::state(const std::string& key) const {
  auto st = db_->prepare("SELECT key, value, updated_ms, updated_by FROM state WHERE key = ?1", "reading state");
  st.bind(1, key);
  if (!st.step()) return std::nullopt;
  return readState(st);
}

void Store::putState(const StateRow& s) {
  requireNonEmpty(s.key, "state key");
  requireJson(s.value, "state '" + s.key + "': value");
  auto st = db_->prepare(
      "INSERT INTO state (key, value, updated_ms, updated_by) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (key) DO UPDATE SET "
      "value = excluded.value, updated_ms = excluded.updated_ms, updated_by = excluded.updated_by",
      "storing state");
  st.bind(1, s.key).bind(2, s.value).bind(3, s.updatedMs).bind(4, s.updatedBy);
  st.run();
}

std::vector<StateRow> Store::states(const std::string& prefix) const {
  auto end = prefixEnd(prefix);
  const char* sql = prefix.empty() ? "SELECT key, value, updated_ms, updated_by FROM state ORDER BY key"
                    : end ? "SELECT key, value, updated_ms, updated_by FROM state WHERE key >= ?1 AND key < ?2 ORDER BY key"
                          : "SELECT key, value, updated_ms, updated_by FROM state WHERE key >= ?1 ORDER BY key";
  auto st = db_->prepare(sql, "listing state");
  if (!prefix.empty()) st.bind(1, prefix);
  if (end) st.bind(2, *end);
  std::vector<StateRow> out;
  while (st.step()) out.push_back(readState(st));
  return out;
}

void Store::putSubscription(const SubscriptionRow& s) {
  requireNonEmpty(s.id, "subscription id");
  std::string what = "subscription '" + s.id + "': ";
  requireNonEmpty(s.agent, what + "agent");
  requireNonEmpty(s.session, what + "session");
  requireNonEmpty(s.source, what + "source");
  if (s.throttleSec < 0) throw StoreError(what + "throttleSec is negative; pass 0 for no throttling");
  auto st = db_->prepare(
      "INSERT INTO subscriptions (id, agent, session, source, topic, separate, throttle_sec, created_ms, "
      "last_delivered_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (id) DO UPDATE SET "
      "agent = excluded.agent, session = excluded.session, source = excluded.source, topic = excluded.topic, "
      "separate = excluded.separate, throttle_sec = excluded.throttle_sec, created_ms = excluded.created_ms, "
      "last_delivered_ms = excluded.last_delivered_ms",
      "storing a subscription");
  st.bind(1, s.id).bind(2, s.agent).bind(3, s.session).bind(4, s.source).bind(5, s.topic).bind(6, s.separate);
  st.bind(7, s.throttleSec).bind(8, s.createdMs).bind(9, s.lastDeliveredMs);
  st.run();
}

bool Store::removeSubscription(const std::string& id) {
  auto st = db_->prepare("DELETE FROM subscriptions WHERE id = ?1", "removing a subscription");
  st.bind(1, id);
  st.run();
  return db_->changes() == 1;
}

std::vector<SubscriptionRow> Store::subscriptions(const std::string& agent) const {
  auto st = db_->prepare(agent.empty() ? SUBSCRIPTION_COLUMNS " ORDER BY agent, created_ms, id"
                                       : SUBSCRIPTION_COLUMNS " WHERE agent = ?1 ORDER BY created_ms, id",
                         "listing subscriptions");
  if (!agent.empty()) st.bind(1, agent);
  std::vector<SubscriptionRow> out;
  while (st.step()) out.push_back(readSubscription(st));
  return out;
}

void Store::touchSubscription(const std::string& id, long long deliveredMs) {
  auto st = db_->prepare("UPDATE subscriptions SET last_delivered_ms = ?2 WHERE id = ?1", "touching a subscription");
  st.bind(1, id).bind(2, deliveredMs);
  st.run();
}

std::optional<long long> Store::lastRun(const std::string& schedule) const {
  auto st = db_->prepare("SELECT last_ms FROM schedule_runs WHERE schedule = ?1", "reading a schedule's last run");
  st.bind(1, schedule);
  if (!st.step()) return std::nullopt;
  return st.i64(0);
}

void Store::setLastRun(const std::string& schedule, long long ms, const std::string& taskId) {
  requireNonEmpty(schedule, "schedule name");
  auto st = db_->prepare(
      "INSERT INTO schedule_runs (schedule, last_ms, task_id) VALUES (?1, ?2, ?3) ON CONFLICT (schedule) DO UPDATE "
      "SET last_ms = excluded.last_ms, task_id = excluded.task_id",
      "storing a schedule's last run");
  st.bind(1, schedule).bind(2, ms).bind(3, taskId);
  st.run();
}

bool Store::beginBoot(const std::string& bootId, long long nowMs) {
  requireNonEmpty(bootId, "pined's boot id");
  Tx tx(*db_, "recording pined's boot");
  std::string stored;
  {
    auto st = db_->prepare("SELECT boot_id FROM boot WHERE id = 1", "reading pined's boot");
    if (st.step()) stored = st.text(0);
  }
  bool fresh = stored != bootId;
  if (fresh) {
    // Grants, "always" answers and mode switches hold until pined restarts (pine-security.md layer 4).
    db_->prepare("DELETE FROM grants", "removing the grants of pined's last run").run();
    db_->prepare("DELETE FROM mode_switches", "removing the mode switches of pined's last run").run();
    auto st = db_->prepare(
        "INSERT INTO boot (id, boot_id, started_ms) VALUES (1, ?1, ?2) ON CONFLICT (id) DO UPDATE SET "
        "boot_id = excluded.boot_id, started_ms = excluded.started_ms",
        "recording pined's boot");
    st.bind(1, bootId).bind(2, nowMs);
    st.run();
  }
  tx.commit();
  return fresh;
}

void Store::setModeSwitch(const std::string& agent, const std::string& mode, long long nowMs) {
  requireNonEmpty(agent, "mode switch: agent");
  requireOneOf(mode, {"manual", "auto", "bypass"}, "mode switch of " + agent + ": mode");
  auto st = db_->prepare(
      "INSERT INTO mode_switches (agent, mode, set_ms) VALUES (?1, ?2, ?3) ON CONFLICT (agent) DO UPDATE SET "
      "mode = excluded.mode, set_ms = excluded.set_ms",
      "storing a mode switch");
  st.bind(1, agent).bind(2, mode).bind(3, nowMs);
  st.run();
}

std::vector<std::pair<std::string, std::string>> Store::modeSwitches() const {
  auto st = db_->prepare("SELECT agent, mode FROM mode_switches ORDER BY agent", "reading mode switches");
  std::vector<std::pair<std::string, std::string>> out;
  while (st.step()) out.emplace_back(st.text(0), st.text(1));
  return out;
}

}  // namespace pine::store
