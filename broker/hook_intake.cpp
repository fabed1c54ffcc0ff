#include "broker/hook_intake.h"

#include "broker/api_auth.h"
#include "common/log.h"
#include "common/sha256_hex.h"

#include <spdlog/spdlog.h>

namespace pine {
namespace {

// A retry of a delivery that names itself is recognised for a week (GitHub's "Redeliver" is manual).
constexpr long long kDeliveryIdKeepMs = 7LL * 24 * 3600 * 1000;
constexpr const char* kDeliveryIdHeaders[] = {"x-github-delivery", "x-request-id", "idempotency-key"};

std::string hookLower(std::string s) {
  for (auto& c : s) c = (char)std::tolower((unsigned char)c);
  return s;
}

// name=value&... as a JSON object; a name given twice becomes a list. nullopt on a broken escape.
std::optional<nlohmann::json> formObject(const std::string& body) {
  nlohmann::json out = nlohmann::json::object();
  size_t pos = 0;
  while (pos <= body.size() && !body.empty()) {
    size_t amp = body.find('&', pos);
    std::string item = body.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    if (!item.empty()) {
      size_t eq = item.find('=');
      auto k = percentDecode(item.substr(0, eq), true);
      auto v = percentDecode(eq == std::string::npos ? "" : item.substr(eq + 1), true);
      if (!k || !v) return std::nullopt;
      if (!out.contains(*k))
        out[*k] = *v;
      else {
        if (!out[*k].is_array()) out[*k] = nlohmann::json::array({out[*k]});
        out[*k].push_back(*v);
      }
    }
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
  return out;
}

void auditRefusal(const std::string& hook, int status, const std::string& why) {
  // Never the secret, the signature or the token: only what failed.
  audit("hook.refused", {{"hook", hook}, {"status", status}, {"why", why}});
}

}  // namespace

std::optional<HookIntake::Hook> HookIntake::find(const std::string& name) const {
  const auto& cfg = *p_.config;
  for (const auto& w : cfg.pine.webhooks)
    if (w.name == name) return Hook{w.name, w.topic, &w, false};
  for (const auto& s : cfg.pine.sources)
    if (s.type == "webhook" && s.name == name) return Hook{s.name, s.topic, &s.hook, s.trust == config::Trust::Owner};
  return std::nullopt;
}

uint64_t HookIntake::bodyLimit(const std::string& name) const {
  auto h = find(name);
  return h ? (uint64_t)h->auth->maxBodyKb * 1024 : 0;
}

int HookIntake::retryAfter(const std::string& name) {
  long long now = p_.nowMs();
  auto& times = recent_[name];
  while (!times.empty() && times.front() <= now - 60000) times.pop_front();
  if ((int)times.size() >= kPerMinute) return (int)((times.front() + 60000 - now + 999) / 1000);
  times.push_back(now);
  return 0;
}

kj::Promise<ApiReply> HookIntake::deliver(const std::string& name, HookDelivery d) {
  auto hook = find(name);
  if (!hook) {
    auditRefusal(name.substr(0, 64), 404, "no such hook");
    return apiError(404, "no webhook called '" + name.substr(0, 64) + "'");
  }
  if (int wait = retryAfter(name)) {
    auditRefusal(name, 429, "more than 120 requests a minute");
    ApiReply r = apiError(429, "this hook takes at most 120 requests a minute; retry later");
    r.retryAfterSec = wait;
    return r;
  }
  if (d.body.size() > bodyLimit(name)) {
    auditRefusal(name, 413, "body too large");
    return apiError(413, "the body is larger than this hook's maxBodyKb");
  }
  const config::HookAuth& a = *hook->auth;
  auto headerOf = [&](const std::string& n) {
    auto it = d.headers.find(hookLower(n));
    return it == d.headers.end() ? std::string() : it->second;
  };
  // What the caller presents, as pined expects it: the bearer value, or the signature without its prefix.
  std::string presented, timestamp;
  if (!a.open) {
    if (a.auth == config::WebhookAuth::Bearer) {
      std::string h = headerOf("authorization");
      if (h.size() < 7 || hookLower(h.substr(0, 7)) != "bearer ") {
        auditRefusal(name, 401, "no bearer token");
        return apiError(401, "send Authorization: Bearer <the hook's secret>");
      }
      presented = h.substr(7);
    } else {
      std::string h = headerOf(a.signatureHeader);
      if (h.empty()) {
        auditRefusal(name, 401, "no signature");
        return apiError(401, "no " + a.signatureHeader + " header: sign the body with HMAC-SHA256");
      }
      if (h.compare(0, a.signaturePrefix.size(), a.signaturePrefix) != 0) {
        auditRefusal(name, 401, "wrong signature prefix");
        return apiError(401, "the " + a.signatureHeader + " header must start with '" + a.signaturePrefix + "'");
      }
      presented = h.substr(a.signaturePrefix.size());
      if (!a.timestampHeader.empty()) timestamp = headerOf(a.timestampHeader);
    }
    if (presented.size() > 512 || timestamp.size() > 32) {
      auditRefusal(name, 401, "credentials too long");
      return apiError(401, "the signature or token is too long");
    }
  }
  // The key a repeat is known by: the sender's delivery id, else the signed body (and its time).
  std::string key;
  long long keepMs = 0;
  for (const char* h : kDeliveryIdHeaders)
    if (auto v = headerOf(h); !v.empty() && v.size() <= 256) {
      key = "id:" + v;
      keepMs = kDeliveryIdKeepMs;
      break;
    }
  if (key.empty() && !a.open && a.auth == config::WebhookAuth::Hmac) {
    key = "body:" + sha256Hex(timestamp + "." + d.body);
    keepMs = (long long)a.toleranceSec * 1000;
  }
  if (a.open) return accept(*hook, kj::mv(d), kj::mv(key), keepMs);
  auto check = p_.check(name, d.body, presented, timestamp);
  return check.then([this, hook = *hook, d = kj::mv(d), key = kj::mv(key), keepMs](
                        HookCheckResult r) mutable -> kj::Promise<ApiReply> {
    if (!r.ok) {
      auditRefusal(hook.name, 401, r.why);
      return apiError(401, "the hook's secret was not proven: " + r.why);
    }
    return accept(kj::mv(hook), kj::mv(d), kj::mv(key), keepMs);
  });
}

kj::Promise<ApiReply> HookIntake::accept(Hook hook, HookDelivery d, std::string key, long long keepMs) {
  // By value: it may run after this call has returned (a copy still in flight).
  auto repeat = [name = hook.name](const std::string& eventId) {
    audit("hook.received", {{"hook", name}, {"event", eventId}, {"repeat", true}});
    return ApiReply{200, {{"event", eventId}, {"repeat", true}}};
  };
  if (!key.empty()) {
    if (auto id = p_.store.hookDelivery(hook.name, key, p_.nowMs())) return repeat(*id);
    auto it = inFlight_.find({hook.name, key});
    if (it != inFlight_.end())
      return it->second.addBranch().then([repeat](std::string id) { return repeat(id); });
  }
  // Parsed only once the sender proved the secret.
  std::string type = hookLower(d.headers.count("content-type") ? d.headers["content-type"] : "");
  type = type.substr(0, type.find(';'));
  while (!type.empty() && type.back() == ' ') type.pop_back();
  nlohmann::json payload;
  if (type == "application/x-www-form-urlencoded") {
    auto form = formObject(d.body);
    if (!form) {
      auditRefusal(hook.name, 400, "malformed form body");
      return apiError(400, "the form body has a broken %-escape");
    }
    payload = kj::mv(*form);
  } else if (d.body.empty()) {
    payload = nullptr;
  } else if (type.empty() || type == "application/json" || (type.size() > 5 && type.ends_with("+json"))) {
    payload = nlohmann::json::parse(d.body, nullptr, false);
    if (payload.is_discarded()) {
      auditRefusal(hook.name, 400, "malformed JSON body");
      return apiError(400, "the body is not JSON");
    }
  } else {
    auditRefusal(hook.name, 415, "content type " + type.substr(0, 64));
    return apiError(415, "send application/json or application/x-www-form-urlencoded");
  }
  store::Event e;
  e.topic = hook.topic;
  e.source = hook.name;
  e.origin = "hook:" + hook.name;
  e.trust = hook.ownerTrust ? "owner" : "untrusted";
  e.payload = payload.dump();
  size_t bytes = d.body.size();
  // The commit runs on in tasks_ even when the sender hangs up: once the event is in, its delivery
  // is remembered, so that the sender's retry is not delivered again.
  auto paf = kj::newPromiseAndFulfiller<std::string>();
  auto forked = paf.promise.fork();
  auto mine = forked.addBranch();
  auto slot = std::make_pair(hook.name, key);
  if (!key.empty()) inFlight_.insert_or_assign(slot, kj::mv(forked));
  auto fulfiller = std::make_shared<kj::Own<kj::PromiseFulfiller<std::string>>>(kj::mv(paf.fulfiller));
  tasks_.add(p_.bus.publish(std::move(e))
                 .then([this, hook, slot, keepMs, bytes, fulfiller](store::Event c) {
                   if (!slot.second.empty())
                     p_.store.rememberHookDelivery(hook.name, slot.second, c.id, p_.nowMs() + keepMs, p_.nowMs());
                   audit("hook.received", {{"hook", hook.name}, {"event", c.id}, {"bytes", bytes}});
                   inFlight_.erase(slot);
                   (*fulfiller)->fulfill(kj::mv(c.id));
                 })
                 .catch_([this, slot, fulfiller](kj::Exception&& ex) {
                   inFlight_.erase(slot);
                   (*fulfiller)->reject(kj::mv(ex));
                 }));
  return mine.then([](std::string id) { return ApiReply{202, {{"event", id}}}; });
}

void HookIntake::taskFailed(kj::Exception&& e) { spdlog::warn("webhook: {}", e.getDescription().cStr()); }

}  // namespace pine
