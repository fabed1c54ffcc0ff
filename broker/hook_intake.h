// Webhooks: POST /hooks/<name> on the control API's listeners (webhooks[] and `type: webhook`
// sources). The caller proves it knows the hook's secret, which the broker never holds: pined
// checks the bearer token or HMAC (Supervisor.checkHook), the broker does the rest. Each
// hook has its fixed topic, 120 deliveries a minute (and, apart, 120 failed proofs: a stranger
// who cannot prove the secret cannot use up the sender's), a body cap, JSON or form bodies; a
// delivery its sender repeats (same delivery id and body, or the same signed body within the
// window its time allows) is acknowledged and not delivered again; 202 only once committed.
#pragma once
#include <kj/async.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/api_backend.h"
#include "broker/event_bus.h"
#include "broker/store/store.h"
#include "common/line_budget.h"
#include "config/model.h"

namespace pine {

struct HookCheckResult {
  bool ok = false;
  std::string why;
};

class HookIntake final : private kj::TaskSet::ErrorHandler {
 public:
  static constexpr int kPerMinute = 120;
  static constexpr int kRefusalsAuditedPerMinute = 300;

  // Asks whoever holds the secret (pined) whether `presented` proves it for `body`.
  using Checker = std::function<kj::Promise<HookCheckResult>(const std::string& hook, const std::string& body,
                                                             const std::string& presented,
                                                             const std::string& timestamp)>;
  struct Parts {
    const std::shared_ptr<const config::Home>& config;
    store::Store& store;
    EventBus& bus;
    Checker check;
    std::function<long long()> nowMs;  // the clock (tests move it)
  };
  explicit HookIntake(Parts parts) : p_(std::move(parts)), tasks_(*this) {}

  // The body cap of hook `name`, or 0 when there is no such hook.
  uint64_t bodyLimit(const std::string& name) const;
  kj::Promise<ApiReply> deliver(const std::string& name, HookDelivery delivery);

 private:
  struct Hook {
    std::string name, topic;
    const config::HookAuth* auth;
    bool ownerTrust;
  };
  std::optional<Hook> find(const std::string& name) const;
  // How a name no hook has is written in the audit log (never a possible secret).
  std::string shownUnknownName(const std::string& name) const;
  // 0 when `name` had fewer than kPerMinute in `recent` in the last minute (counting this one
  // when `count`), else the seconds to wait.
  int retryAfter(std::map<std::string, std::deque<long long>>& recent, const std::string& name, bool count);
  // An audit line for a refused request, within audited_; past it, a count the next minute.
  void auditRefusal(const std::string& hook, int status, const std::string& why);
  ApiReply tooManyDeliveries(const std::string& hook, int wait);
  // 401 with `message`, or 429 once the hook's failed proofs reach the rate.
  ApiReply refuseProof(const std::string& name, const std::string& why, const std::string& message);
  // The keys a repeat of this delivery is known by, each kept for its time (ms).
  using RepeatKeys = std::vector<std::pair<std::string, long long>>;
  kj::Promise<ApiReply> accept(Hook hook, HookDelivery d, RepeatKeys keys);

  void taskFailed(kj::Exception&& e) override;

  Parts p_;
  // Per hook, times in the last minute: deliveries, and requests that failed to prove the secret.
  std::map<std::string, std::deque<long long>> recent_, failed_;
  // A repeat that arrives while the first is still being committed waits for it (under each key).
  std::map<std::pair<std::string, std::string>, std::shared_ptr<kj::ForkedPromise<std::string>>> inFlight_;
  // Refusals audited a minute: a stranger's requests to made-up hooks, or past a hook's rate, are
  // each refused, and would otherwise each be a line (common/line_budget.h). The configured hooks
  // together, and the made-up names apart.
  LineBudget audited_{kRefusalsAuditedPerMinute}, unknownAudited_{kRefusalsAuditedPerMinute};
  kj::TaskSet tasks_;  // last: cancelled first
};

}  // namespace pine
