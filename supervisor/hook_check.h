// The checkHook method of the Supervisor capability: whether a webhook delivery proves it
// knows the hook's secret. The secret lives in .env, which only pined reads, so the broker
// sends the raw body and what the caller presented, and pined answers yes or no. The body
// is only MACed, never parsed.
#pragma once
#include <string>
#include <string_view>

#include "config/model.h"
#include "supervisor/secrets/secret_store.h"

namespace pine {

struct HookVerdict {
  bool ok = false;
  std::string why;  // what failed; never anything of the secret
};

// hook: a name in webhooks[] or a `type: webhook` source; presented: the bearer token, or the
// signature without its configured prefix; timestamp: the hook's timestampHeader value, if it
// has one (unix seconds, within toleranceSec of nowSec). Bearer and HMAC are compared with
// CRYPTO_memcmp.
HookVerdict checkHookDelivery(const config::Home& cfg, const secrets::SecretStore& store, std::string_view hook,
                              std::string_view body, std::string_view presented, std::string_view timestamp,
                              long long nowSec);

}  // namespace pine
