#include "supervisor/hook_check.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <charconv>

#include "supervisor/secrets/hmac.h"

namespace pine {
namespace {

const config::HookAuth* findHook(const config::Home& cfg, std::string_view name) {
  for (const auto& w : cfg.pine.webhooks)
    if (w.name == name) return &w;
  for (const auto& s : cfg.pine.sources)
    if (s.type == "webhook" && s.name == name) return &s.hook;
  return nullptr;
}

// Equal lengths are not required of a bearer token, so both sides are hashed first: the
// comparison then takes the same time whatever was presented.
bool sameBearer(std::string_view presented, const std::string& secret) {
  unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), a);
  SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), b);
  bool same = CRYPTO_memcmp(a, b, sizeof a) == 0;
  OPENSSL_cleanse(b, sizeof b);
  return same;
}

}  // namespace

HookVerdict checkHookDelivery(const config::Home& cfg, const secrets::SecretStore& store, std::string_view hook,
                              std::string_view body, std::string_view presented, std::string_view timestamp,
                              long long nowSec) {
  const config::HookAuth* h = findHook(cfg, hook);
  if (!h) return {false, "no such hook"};
  if (h->open) return {true, ""};
  if (body.size() > (size_t)h->maxBodyKb * 1024) return {false, "the body is larger than the hook's maxBodyKb"};
  if (presented.empty()) return {false, h->auth == config::WebhookAuth::Hmac ? "no signature" : "no bearer token"};
  auto secret = store.get(h->secret);
  // Also checked at start; .env may have changed since (pinectl secret set).
  if (!secret || secret->size() < config::kMinHookSecretBytes) {
    if (secret) OPENSSL_cleanse(secret->data(), secret->size());
    return {false, "the hook's secret is missing from .env or too short"};
  }
  if (h->auth == config::WebhookAuth::Bearer) {
    bool same = sameBearer(presented, *secret);
    OPENSSL_cleanse(secret->data(), secret->size());
    return same ? HookVerdict{true, ""} : HookVerdict{false, "wrong bearer token"};
  }
  OPENSSL_cleanse(secret->data(), secret->size());
  std::string signedText;
  if (!h->timestampHeader.empty()) {
    long long ts = 0;
    auto [end, ec] = std::from_chars(timestamp.data(), timestamp.data() + timestamp.size(), ts);
    if (timestamp.empty() || ec != std::errc() || end != timestamp.data() + timestamp.size())
      return {false, "no timestamp, or not unix seconds"};
    if (ts < nowSec - h->toleranceSec || ts > nowSec + h->toleranceSec)
      return {false, "the timestamp is outside the tolerance window"};
    signedText.append(timestamp).append(".").append(body);
    body = signedText;
  }
  if (!secrets::verifyHmacSha256(store, h->secret, body, presented)) return {false, "wrong signature"};
  return {true, ""};
}

}  // namespace pine
