// Webhooks: POST /hooks/<name> on the control API's listeners (webhooks[] and `type: webhook`
// sources). The caller proves it knows the hook's secret, which the broker never holds: pined
// checks the bearer token or HMAC (Supervisor.checkHook), the broker does the rest. Each
// hook has its fixed topic, 120 requests a minute, a body cap, JSON or form bodies; a delivery
// its sender repeats (same delivery id, or the same signed body within toleranceSec) is
// acknowledged and not delivered again; 202 only once the event is committed.
#pragma once
#include <kj/async.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "broker/api_backend.h"
#include "broker/event_bus.h"
#include "broker/store/store.h"
#include "config/model.h"

namespace pine {

struct HookCheckResult {
  bool ok = false;
  std::string why;
};

class HookIntake final : private kj::TaskSet::ErrorHandler {
 public:
  static constexpr int kPerMinute = 120;

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
  int retryAfter(const std::string& name);  // 0 when under the rate, else seconds to wait
  kj::Promise<ApiReply> accept(Hook hook, HookDelivery d, std::string key, long long keepMs);

  void taskFailed(kj::Exception&& e) override;

  Parts p_;
  std::map<std::string, std::deque<long long>> recent_;  // per hook: request times in the last minute
  // A repeat that arrives while the first is still being committed waits for it.
  std::map<std::pair<std::string, std::string>, kj::ForkedPromise<std::string>> inFlight_;
  kj::TaskSet tasks_;  // last: cancelled first
};

}  // namespace pine
