#include "broker/hook_intake.h"

#include "broker/api_auth.h"
#include "common/json_depth.h"
#include "common/log.h"
#include "common/outside_json.h"
#include "common/sha256_hex.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string_view>
#include <vector>

namespace pine {
namespace {

// A retry of a delivery that names itself is recognised for a week (GitHub's "Redeliver" is manual).
constexpr long long kDeliveryIdKeepMs = 7LL * 24 * 3600 * 1000;
constexpr const char* kDeliveryIdHeaders[] = {"x-github-delivery", "x-request-id", "idempotency-key"};
// Deeper than any sender's payload, and shallow enough for every copy and dump of it.
constexpr int kMaxNesting = 64;

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

// Edits (a letter added, dropped or changed) from a to b, or more than `limit` once that is certain.
size_t editDistance(std::string_view a, std::string_view b, size_t limit) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > limit) return limit + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0], best = row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = row[j];
      best = std::min(best, row[j] = next);
    }
    if (best > limit) return limit + 1;
  }
  return row[b.size()];
}

}  // namespace

std::string HookIntake::shownUnknownName(const std::string& name) const {
  // A sender's URL may carry a secret in its path (a "secret URL" habit), and the broker holds no
  // secret to redact it by: an unknown name is written only when it is a slip of a configured
  // one (two edits at most), which a secret is not; else only its length.
  const auto& cfg = *p_.config;
  auto near = [&](const std::string& known) { return editDistance(name, known, 2) <= 2; };
  if (name.size() <= 64) {
    for (const auto& w : cfg.pine.webhooks)
      if (near(w.name)) return name;
    for (const auto& s : cfg.pine.sources)
      if (s.type == "webhook" && near(s.name)) return name;
  }
  return "(a name of " + std::to_string(name.size()) + " bytes, not like any hook's)";
}

void HookIntake::auditRefusal(const std::string& hook, int status, const std::string& why) {
  // Made-up names (404) have a budget of their own: a flood of them hides no configured hook's refusals.
  const bool unknown = status == 404;
  LineBudget& budget = unknown ? unknownAudited_ : audited_;
  long long skipped = 0;
  bool write = budget.take(p_.nowMs(), &skipped);
  if (skipped > 0)
    audit("hook.refusals_not_audited",
          {{"count", skipped}, {"perMinute", budget.perMinute()}, {"hooks", unknown ? "unknown" : "configured"}});
  // Never the secret, the signature or the token: only what failed.
  if (write) audit("hook.refused", {{"hook", hook}, {"status", status}, {"why", why}});
}

ApiReply HookIntake::tooManyDeliveries(const std::string& hook, int wait) {
  auditRefusal(hook, 429, "more than 120 deliveries a minute");
  ApiReply r = apiError(429, "this hook takes at most 120 requests a minute; retry later");
  r.retryAfterSec = wait;
  return r;
}

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

int HookIntake::retryAfter(std::map<std::string, std::deque<long long>>& recent, const std::string& name, bool count) {
  long long now = p_.nowMs();
  auto& times = recent[name];
  while (!times.empty() && times.front() <= now - 60000) times.pop_front();
  if ((int)times.size() >= kPerMinute) return (int)((times.front() + 60000 - now + 999) / 1000);
  if (count) times.push_back(now);
  return 0;
}

ApiReply HookIntake::refuseProof(const std::string& name, const std::string& why, const std::string& message) {
  if (int wait = retryAfter(failed_, name, true)) {
    auditRefusal(name, 429, "more than 120 failed proofs a minute (" + why + ")");
    ApiReply r = apiError(429, "more than 120 requests a minute failed to prove this hook's secret; retry later");
    r.retryAfterSec = wait;
    return r;
  }
  auditRefusal(name, 401, why);
  return apiError(401, message);
}

kj::Promise<ApiReply> HookIntake::deliver(const std::string& name, HookDelivery d) {
  auto hook = find(name);
  if (!hook) {
    auditRefusal(shownUnknownName(name), 404, "no such hook");
    return apiError(404, "no webhook called '" + name.substr(0, 64) + "'");
  }
  // Deliveries that proved the secret (or came to an open hook) count against the rate; failed
  // proofs count apart, so that a stranger cannot use up the sender's minute. A full minute is
  // answered before pined is asked anything.
  if (int wait = retryAfter(recent_, name, false)) return tooManyDeliveries(name, wait);
  if (d.body.size() > bodyLimit(name)) {
    auditRefusal(name, 413, "body too large");
    return apiError(413, "the body is larger than this hook's maxBodyKb");
  }
  const config::HookAuth& a = *hook->auth;
  // A header that proves, dates or names the delivery must come once: which copy counts would be
  // a guess, and a proxy may pass one copy on and we the other.
  // (Authorization and Content-Type twice are refused before: kj-http would join them into one.)
  std::vector<std::string> once = {hookLower(a.signatureHeader)};
  if (!a.timestampHeader.empty()) once.push_back(hookLower(a.timestampHeader));
  for (const char* h : kDeliveryIdHeaders) once.push_back(h);
  for (const auto& h : once)
    if (!h.empty() && d.repeated.count(h)) {
      auditRefusal(name, 400, "a header that must come once came twice");
      return apiError(400, "the " + h + " header came more than once; send it once");
    }
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
        return refuseProof(name, "no bearer token", "send Authorization: Bearer <the hook's secret>");
      }
      presented = h.substr(7);
    } else {
      std::string h = headerOf(a.signatureHeader);
      if (h.empty()) {
        return refuseProof(name, "no signature", "no " + a.signatureHeader + " header: sign the body with HMAC-SHA256");
      }
      if (h.compare(0, a.signaturePrefix.size(), a.signaturePrefix) != 0) {
        return refuseProof(name, "wrong signature prefix",
                           "the " + a.signatureHeader + " header must start with '" + a.signaturePrefix + "'");
      }
      presented = h.substr(a.signaturePrefix.size());
      if (!a.timestampHeader.empty()) timestamp = headerOf(a.timestampHeader);
    }
    if (presented.size() > 512 || timestamp.size() > 32) {
      return refuseProof(name, "credentials too long", "the signature or token is too long");
    }
  }
  // The keys a repeat is known by. The sender's delivery id with the body: a retry carries both,
  // and a new body under an id seen before is a new delivery, not one to drop. And for a signed
  // hook the signed body (with its time) whatever id comes with it, since an id is not signed:
  // kept as long as pined would accept that signature, a time up to toleranceSec ahead included.
  std::string bodyHash = sha256Hex(timestamp + "." + d.body);
  RepeatKeys keys;
  // Each id header that came is a key of its own: a proxy or a client library may add a new
  // X-Request-Id to each attempt of a delivery whose Idempotency-Key stays the same.
  for (const char* h : kDeliveryIdHeaders)
    if (auto v = headerOf(h); !v.empty())
      // Known by its hash: stored for a week, and a stranger's header text (which could be a
      // secret the broker cannot redact) is not; still a repeat when it comes again.
      keys.push_back({"id:sha256:" + sha256Hex(v) + ":" + bodyHash, kDeliveryIdKeepMs});
  if (!a.open && a.auth == config::WebhookAuth::Hmac)
    keys.push_back({"body:" + bodyHash, (2LL * a.toleranceSec + 1) * 1000});
  if (a.open) {
    retryAfter(recent_, name, true);
    return accept(*hook, kj::mv(d), kj::mv(keys));
  }
  auto check = p_.check(name, d.body, presented, timestamp);
  return check.then([this, hook = *hook, d = kj::mv(d), keys = kj::mv(keys)](
                        HookCheckResult r) mutable -> kj::Promise<ApiReply> {
    if (!r.ok) return refuseProof(hook.name, r.why, "the hook's secret was not proven: " + r.why);
    // Counted now: others may have proved it meanwhile.
    if (int wait = retryAfter(recent_, hook.name, true)) return tooManyDeliveries(hook.name, wait);
    return accept(kj::mv(hook), kj::mv(d), kj::mv(keys));
  });
}

kj::Promise<ApiReply> HookIntake::accept(Hook hook, HookDelivery d, RepeatKeys keys) {
  // By value: it may run after this call has returned (a copy still in flight).
  auto repeat = [name = hook.name](const std::string& eventId) {
    audit("hook.received", {{"hook", name}, {"event", eventId}, {"repeat", true}});
    return ApiReply{200, {{"event", eventId}, {"repeat", true}}};
  };
  // Nothing is acknowledged that was not committed: the sender is told to try again.
  auto notStored = [name = hook.name](kj::Exception&& ex) {
    spdlog::warn("webhook '{}': not stored: {}", name, ex.getDescription().cStr());
    return apiError(503, "the delivery could not be stored; send it again");
  };
  for (const auto& [key, keepMs] : keys) {
    if (auto id = p_.store.hookDelivery(hook.name, key, p_.nowMs())) return repeat(*id);
    auto it = inFlight_.find({hook.name, key});
    if (it != inFlight_.end())
      return it->second->addBranch().then([repeat](std::string id) { return repeat(id); }, kj::mv(notStored));
  }
  // Parsed only once the sender proved the secret, and only if no copy or dump of it can recurse
  // without bound.
  std::string type = hookLower(d.headers.count("content-type") ? d.headers["content-type"] : "");
  type = type.substr(0, type.find(';'));
  // Spaces or tabs may stand before the ';' (RFC 9110 5.6.6).
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
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
    if (jsonNestingDepth(d.body) > kMaxNesting) {
      auditRefusal(hook.name, 400, "JSON nested too deep");
      return apiError(400, "the body nests deeper than " + std::to_string(kMaxNesting) + " levels of [ and {");
    }
    payload = parseOutsideJson(d.body);
    if (payload.is_discarded()) {
      auditRefusal(hook.name, 400, "malformed JSON body");
      return apiError(400, "the body is not JSON");
    }
  } else {
    // Not the type as sent: a stranger's header text could carry a secret, and the broker holds none to redact.
    auditRefusal(hook.name, 415, "a content type of " + std::to_string(type.size()) + " bytes, neither JSON nor a form");
    return apiError(415, "send application/json or application/x-www-form-urlencoded");
  }
  store::Event e;
  e.topic = hook.topic;
  e.source = hook.name;
  e.origin = "hook:" + hook.name;
  e.trust = hook.ownerTrust ? "owner" : "untrusted";
  try {
    e.payload = payload.dump();
  } catch (const nlohmann::json::type_error&) {  // a form field %-escaped into bytes that are not UTF-8
    auditRefusal(hook.name, 400, "form body not UTF-8");
    return apiError(400, "the form's names and values must be UTF-8 text once %-decoded");
  }
  size_t bytes = d.body.size();
  // The commit runs on in tasks_ even when the sender hangs up: once the event is in, its delivery
  // is remembered, so that the sender's retry is not delivered again.
  auto paf = kj::newPromiseAndFulfiller<std::string>();
  auto forked = std::make_shared<kj::ForkedPromise<std::string>>(paf.promise.fork());
  auto mine = forked->addBranch();
  for (const auto& k : keys) inFlight_.insert_or_assign({hook.name, k.first}, forked);
  auto forget = [this, name = hook.name, keys] {
    for (const auto& k : keys) inFlight_.erase({name, k.first});
  };
  auto fulfiller = std::make_shared<kj::Own<kj::PromiseFulfiller<std::string>>>(kj::mv(paf.fulfiller));
  tasks_.add(p_.bus.publish(std::move(e))
                 .then([this, hook, keys, forget, bytes, fulfiller](store::Event c) {
                   for (const auto& [key, keepMs] : keys)
                     p_.store.rememberHookDelivery(hook.name, key, c.id, p_.nowMs() + keepMs, p_.nowMs());
                   audit("hook.received", {{"hook", hook.name}, {"event", c.id}, {"bytes", bytes}});
                   forget();
                   (*fulfiller)->fulfill(kj::mv(c.id));
                 })
                 .catch_([forget, fulfiller](kj::Exception&& ex) {
                   forget();
                   (*fulfiller)->reject(kj::mv(ex));
                 }));
  return mine.then([](std::string id) { return ApiReply{202, {{"event", id}}}; }, kj::mv(notStored));
}

void HookIntake::taskFailed(kj::Exception&& e) { spdlog::warn("webhook: {}", e.getDescription().cStr()); }

}  // namespace pine
