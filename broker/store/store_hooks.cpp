// Webhook deliveries already committed as events: a sender's retry finds its event here.
#include "broker/store/checks.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

std::optional<std::string> Store::hookDelivery(const std::string& hook, const std::string& key, long long nowMs) const {
  auto st = db_->prepare("SELECT event_id FROM hook_deliveries WHERE hook = ?1 AND key = ?2 AND expires_ms > ?3",
                         "reading a webhook delivery");
  st.bind(1, hook).bind(2, key).bind(3, nowMs);
  if (!st.step()) return std::nullopt;
  return st.text(0);
}

void Store::rememberHookDelivery(const std::string& hook, const std::string& key, const std::string& eventId,
                                 long long expiresMs, long long nowMs) {
  requireNonEmpty(hook, "webhook delivery hook");
  requireNonEmpty(key, "webhook delivery key");
  Tx tx(*db_, "remembering a webhook delivery");
  auto gone = db_->prepare("DELETE FROM hook_deliveries WHERE expires_ms <= ?1", "dropping expired webhook deliveries");
  gone.bind(1, nowMs);
  gone.run();
  auto st = db_->prepare(
      "INSERT INTO hook_deliveries (hook, key, event_id, expires_ms) VALUES (?1, ?2, ?3, ?4) "
      "ON CONFLICT (hook, key) DO UPDATE SET event_id = excluded.event_id, expires_ms = excluded.expires_ms",
      "remembering a webhook delivery");
  st.bind(1, hook).bind(2, key).bind(3, eventId).bind(4, expiresMs);
  st.run();
  tx.commit();
}

}  // namespace pine::store
