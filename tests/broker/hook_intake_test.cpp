// Webhooks behind the HTTP side: HookIntake over a real store and event bus, with pined's own
// check (checkHookDelivery over a real .env) standing in for the capnp call to pined.
#include <doctest/doctest.h>
#include <kj/async.h>
#include <openssl/hmac.h>

#include <fstream>
#include <set>
#include <sstream>

#include "broker/event_bus.h"
#include "broker/hook_intake.h"
#include "common/log.h"
#include "supervisor/hook_check.h"
#include "tests/broker/fake_services.h"

namespace {

const std::string kSecret = "whsec-0123456789abcdef-XYZ";

std::string hmacHex(const std::string& key, const std::string& text) {
  unsigned char mac[32];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), (int)key.size(), (const unsigned char*)text.data(), text.size(), mac, &n);
  std::string out;
  for (unsigned i = 0; i < n; ++i) out += fmt::format("{:02x}", mac[i]);
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct HookBench {
  std::string root;
  kj::EventLoop loop;
  kj::WaitScope ws{loop};
  std::shared_ptr<const pine::config::Home> config;
  std::unique_ptr<pine::store::Store> db;
  std::unique_ptr<pine::secrets::SecretStore> secrets;
  std::unique_ptr<pine::EventBus> bus;
  std::unique_ptr<pine::HookIntake> intake;
  long long now = 1'800'000'000'000;
  int checks = 0;

  HookBench() {
    char tmpl[] = "/tmp/pine-hook-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    root = tmpl;
    config = brokertest::loadTestHome(root, {{"main", ""}},
                                      "webhooks:\n"
                                      "  - {name: gh, topic: ci/github, secret: GH_HOOK, auth: hmac, maxBodyKb: 1}\n"
                                      "  - {name: ha, topic: home/ha, secret: GH_HOOK}\n"
                                      "  - {name: stamp, topic: pay/x, secret: GH_HOOK, auth: hmac, signatureHeader: X-Sig,\n"
                                      "     signaturePrefix: 'v1=', timestampHeader: X-Time, toleranceSec: 60}\n"
                                      "  - {name: anyone, topic: open/x, open: true}\n"
                                      "  - {name: bare, topic: bare/x, secret: GH_HOOK, auth: hmac, signatureHeader: X-Signature,\n"
                                      "     signaturePrefix: ''}\n"
                                      "sources:\n"
                                      "  - {name: mine, type: webhook, topic: owner/x, secret: GH_HOOK, trust: owner}\n");
    brokertest::writeFile(root + "/.env", "GH_HOOK=" + kSecret + "\n");
    secrets = std::make_unique<pine::secrets::SecretStore>(root + "/.env");
    REQUIRE(secrets->load().empty());
    std::filesystem::create_directories(root + "/data/logs");
    pine::setupAudit(root + "/data/logs/audit.jsonl");
    db = pine::store::Store::open(root + "/data/pine.db");
    bus = std::make_unique<pine::EventBus>(*db, [](const pine::store::Event&, pine::EventText&) {});
    intake = std::make_unique<pine::HookIntake>(pine::HookIntake::Parts{
        config, *db, *bus,
        [this](const std::string& hook, const std::string& body, const std::string& presented,
               const std::string& ts) -> kj::Promise<pine::HookCheckResult> {
          ++checks;
          auto v = pine::checkHookDelivery(*config, *secrets, hook, body, presented, ts, now / 1000);
          return pine::HookCheckResult{v.ok, v.why};
        },
        [this] { return now; }});
  }
  ~HookBench() {
    intake.reset();
    bus.reset();
    db.reset();
    pine::setupAudit("");
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  pine::ApiReply post(const std::string& hook, const std::string& body, std::map<std::string, std::string> headers,
                      std::set<std::string> repeated = {}) {
    pine::HookDelivery d;
    d.headers = std::move(headers);
    d.repeated = std::move(repeated);
    d.body = body;
    return intake->deliver(hook, std::move(d)).wait(ws);
  }
  std::vector<pine::store::Event> events() {
    pine::store::EventQuery q;
    q.limit = 1000;
    return db->events(q);
  }
};

}  // namespace

TEST_CASE("hooks: a valid HMAC delivery commits one untrusted event with the hook's topic and payload") {
  HookBench b;
  std::string body = R"({"action":"opened","n":1})";
  auto r = b.post("gh", body, {{"x-hub-signature-256", "sha256=" + hmacHex(kSecret, body)}, {"content-type", "application/json"}});
  CHECK(r.status == 202);
  auto ev = b.events();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].id == r.body["event"]);
  CHECK(ev[0].topic == "ci/github");
  CHECK(ev[0].trust == "untrusted");
  CHECK(ev[0].source == "gh");
  CHECK(nlohmann::json::parse(ev[0].payload) == nlohmann::json::parse(body));
}

TEST_CASE("hooks: wrong, missing, wrongly prefixed or other-body signatures are 401 and commit nothing") {
  HookBench b;
  std::string body = R"({"a":1})";
  std::string good = hmacHex(kSecret, body);
  CHECK(b.post("gh", body, {{"x-hub-signature-256", "sha256=" + hmacHex("another-secret-0123456789", body)}}).status == 401);
  CHECK(b.post("gh", body, {}).status == 401);
  CHECK(b.post("gh", body, {{"x-hub-signature-256", "sha1=" + good}}).status == 401);
  CHECK(b.post("gh", body, {{"x-hub-signature-256", "sha256=" + hmacHex(kSecret, R"({"a":2})")}}).status == 401);
  CHECK(b.post("gh", body, {{"x-hub-signature-256", "sha256=" + good.substr(0, 40)}}).status == 401);
  CHECK(b.events().empty());
  CHECK(b.post("gh", body, {{"x-hub-signature-256", "sha256=" + good}}).status == 202);  // the legitimate twin
}

TEST_CASE("hooks: a signature, time or delivery id header that came twice is 400, whichever copy is right") {
  HookBench b;
  std::string body = R"({"twice":1})";
  std::string sig = "sha256=" + hmacHex(kSecret, body);
  // The control API keeps a repeated header's last copy and names it in `repeated`.
  CHECK(b.post("gh", body, {{"x-hub-signature-256", sig}}, {"x-hub-signature-256"}).status == 400);
  CHECK(b.post("gh", body, {{"x-hub-signature-256", sig}, {"x-github-delivery", "d-2"}}, {"x-github-delivery"}).status == 400);
  std::string ts = std::to_string(b.now / 1000);
  CHECK(b.post("stamp", body, {{"x-sig", "v1=" + hmacHex(kSecret, ts + "." + body)}, {"x-time", ts}}, {"x-time"}).status == 400);
  CHECK(b.events().empty());
  // The twins: each once, and another header that came twice, are delivered.
  CHECK(b.post("gh", body, {{"x-hub-signature-256", sig}, {"x-forwarded-for", "a"}}, {"x-forwarded-for"}).status == 202);
  CHECK(b.post("stamp", body, {{"x-sig", "v1=" + hmacHex(kSecret, ts + "." + body)}, {"x-time", ts}}).status == 202);
  CHECK(b.events().size() == 2);
}

TEST_CASE("hooks: bearer wrong is 401, bearer right commits; a source marked owner gives owner events") {
  HookBench b;
  CHECK(b.post("ha", "{}", {{"authorization", "Bearer " + kSecret + "x"}}).status == 401);
  CHECK(b.post("ha", "{}", {{"authorization", "Basic abc"}}).status == 401);
  CHECK(b.events().empty());
  CHECK(b.post("ha", "{}", {{"authorization", "Bearer " + kSecret}}).status == 202);
  CHECK(b.post("mine", "{}", {{"authorization", "bearer " + kSecret}}).status == 202);
  auto ev = b.events();
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].trust == "untrusted");
  CHECK(ev[1].trust == "owner");
  CHECK(ev[1].topic == "owner/x");
}

TEST_CASE("hooks: a repeat by delivery id or by the same signed body is acknowledged, delivered once") {
  HookBench b;
  std::string body = R"({"x":1})";
  std::map<std::string, std::string> h = {{"x-hub-signature-256", "sha256=" + hmacHex(kSecret, body)},
                                          {"x-github-delivery", "d-42"}};
  auto first = b.post("gh", body, h);
  CHECK(first.status == 202);
  auto again = b.post("gh", body, h);
  CHECK(again.status == 200);
  CHECK(again.body["repeat"] == true);
  CHECK(again.body["event"] == first.body["event"]);
  // The same signed body without a delivery id, twice: one event; after the window, a new one.
  std::string body2 = R"({"x":2})";
  std::map<std::string, std::string> h2 = {{"x-hub-signature-256", "sha256=" + hmacHex(kSecret, body2)}};
  CHECK(b.post("gh", body2, h2).status == 202);
  CHECK(b.post("gh", body2, h2).status == 200);
  CHECK(b.events().size() == 2);
  // Remembered as long as pined would take that signature (a time may be toleranceSec ahead).
  b.now += 300'000;
  CHECK(b.post("gh", body2, h2).status == 200);
  b.now += 301'000;
  CHECK(b.post("gh", body2, h2).status == 202);
  CHECK(b.events().size() == 3);
}

TEST_CASE("hooks: a delivery id of any length makes a repeat; another id is another delivery") {
  HookBench b;
  const std::string longId(300, 'd'), otherLong = std::string(299, 'd') + "e";
  auto bearer = [&](const std::string& id) {
    return std::map<std::string, std::string>{{"authorization", "Bearer " + kSecret}, {"x-github-delivery", id}};
  };
  auto first = b.post("ha", "{}", bearer(longId));
  CHECK(first.status == 202);
  auto again = b.post("ha", "{}", bearer(longId));  // before: ids past 256 bytes were ignored, so 202 again
  CHECK(again.status == 200);
  CHECK(again.body["event"] == first.body["event"]);
  CHECK(b.post("ha", "{}", bearer(otherLong)).status == 202);
  CHECK(b.post("ha", "{}", bearer("short")).status == 202);
  CHECK(b.post("ha", "{}", bearer("short")).status == 200);
  CHECK(b.events().size() == 3);
}

TEST_CASE("hooks: each delivery id header makes a repeat, whatever other id headers change") {
  HookBench b;
  auto bearer = [&](std::map<std::string, std::string> ids) {
    ids["authorization"] = "Bearer " + kSecret;
    return ids;
  };
  // A proxy adds a new X-Request-Id to each attempt; the Idempotency-Key stays (before: only the
  // first id header present counted, so the retry was delivered twice).
  auto first = b.post("ha", R"({"n":1})", bearer({{"x-request-id", "r-1"}, {"idempotency-key", "k-1"}}));
  CHECK(first.status == 202);
  auto retry = b.post("ha", R"({"n":1})", bearer({{"x-request-id", "r-2"}, {"idempotency-key", "k-1"}}));
  CHECK(retry.status == 200);
  CHECK(retry.body["event"] == first.body["event"]);
  // The twin: new ids on both headers, or another body under the same key, are new deliveries.
  CHECK(b.post("ha", R"({"n":1})", bearer({{"x-request-id", "r-3"}, {"idempotency-key", "k-2"}})).status == 202);
  CHECK(b.post("ha", R"({"n":2})", bearer({{"x-request-id", "r-4"}, {"idempotency-key", "k-1"}})).status == 202);
  CHECK(b.events().size() == 3);
}

TEST_CASE("hooks: an empty signature prefix takes a bare signature, and only the right one") {
  HookBench b;  // bare: signatureHeader X-Signature, signaturePrefix ''
  std::string body = R"({"b":1})";
  std::string good = hmacHex(kSecret, body);
  CHECK(b.post("bare", body, {{"x-signature", hmacHex(kSecret, "{}")}}).status == 401);
  CHECK(b.post("bare", body, {{"x-signature", hmacHex("another-secret-0123456789", body)}}).status == 401);
  CHECK(b.post("bare", body, {}).status == 401);
  CHECK(b.events().empty());
  CHECK(b.post("bare", body, {{"x-signature", good}}).status == 202);
  CHECK(b.events().size() == 1);
}

TEST_CASE("hooks: a captured signed body sent again under a new delivery id is still a repeat") {
  HookBench b;
  std::string body = R"({"pay":100})";
  std::string sig = "sha256=" + hmacHex(kSecret, body);
  CHECK(b.post("gh", body, {{"x-hub-signature-256", sig}, {"x-github-delivery", "d1"}}).status == 202);
  // The id is not signed: whoever replays the body can change it. Still one event.
  for (const char* h : {"x-github-delivery", "x-request-id", "idempotency-key"})
    CHECK(b.post("gh", body, {{"x-hub-signature-256", sig}, {h, "other-id"}}).status == 200);
  CHECK(b.events().size() == 1);
  // The twin: another signed body under the id seen before is the sender's new delivery, not one
  // to drop (a replayed body cannot claim the sender's future ids).
  std::string next = R"({"pay":200})";
  CHECK(b.post("gh", next, {{"x-hub-signature-256", "sha256=" + hmacHex(kSecret, next)}, {"x-github-delivery", "d1"}})
            .status == 202);
  CHECK(b.events().size() == 2);
}

TEST_CASE("hooks: a body signed with a time ahead of the clock stays a repeat until that time has passed too") {
  HookBench b;  // stamp: toleranceSec 60
  std::string body = R"({"t":2})";
  std::string ahead = std::to_string(b.now / 1000 + 50);
  std::map<std::string, std::string> h = {{"x-sig", "v1=" + hmacHex(kSecret, ahead + "." + body)}, {"x-time", ahead}};
  CHECK(b.post("stamp", body, h).status == 202);
  b.now += 65'000;  // the time is 15 s past: pined still takes it
  CHECK(b.post("stamp", body, h).status == 200);
  b.now += 50'000;  // 65 s past: refused by pined, as any old signature
  CHECK(b.post("stamp", body, h).status == 401);
  CHECK(b.events().size() == 1);
}

TEST_CASE("hooks: two copies in flight at once are committed once") {
  HookBench b;
  std::string body = R"({"y":1})";
  std::map<std::string, std::string> h = {{"x-hub-signature-256", "sha256=" + hmacHex(kSecret, body)},
                                          {"idempotency-key", "k-1"}};
  auto p1 = b.intake->deliver("gh", pine::HookDelivery{h, {}, body});
  auto p2 = b.intake->deliver("gh", pine::HookDelivery{h, {}, body});
  auto r1 = p1.wait(b.ws);
  auto r2 = p2.wait(b.ws);
  CHECK(r1.status == 202);
  CHECK(r2.status == 200);
  CHECK(b.events().size() == 1);
}

TEST_CASE("hooks: 120 a minute, then 429 with Retry-After; oversize 413; unknown 404") {
  HookBench b;
  for (int i = 0; i < 120; ++i) REQUIRE(b.post("anyone", "{}", {}).status == 202);
  auto r = b.post("anyone", "{}", {});
  CHECK(r.status == 429);
  CHECK(r.retryAfterSec > 0);
  CHECK(r.retryAfterSec <= 60);
  CHECK(b.post("gh", "{}", {}).status == 401);  // another hook has its own count
  b.now += 61'000;
  CHECK(b.post("anyone", "{}", {}).status == 202);
  CHECK(b.post("gh", std::string(1025, ' '), {}).status == 413);
  CHECK(b.post("nope", "{}", {}).status == 404);
}

TEST_CASE("hooks: failed proofs have a minute of their own: a stranger cannot use up the sender's") {
  HookBench b;
  for (int i = 0; i < 120; ++i) REQUIRE(b.post("ha", "{}", {{"authorization", "Bearer wrong-" + kSecret}}).status == 401);
  auto r = b.post("ha", "{}", {{"authorization", "Bearer wrong-" + kSecret}});
  CHECK(r.status == 429);
  CHECK(r.retryAfterSec > 0);
  CHECK(b.post("ha", "{}", {}).status == 429);  // no token at all counts as failed too
  // The sender, meanwhile, is served: its deliveries count apart, 120 a minute.
  for (int i = 0; i < 120; ++i) REQUIRE(b.post("ha", "{}", {{"authorization", "Bearer " + kSecret}}).status == 202);
  int checks = b.checks;
  auto full = b.post("ha", "{}", {{"authorization", "Bearer " + kSecret}});
  CHECK(full.status == 429);
  CHECK(b.checks == checks);  // a full minute is answered without asking pined
  CHECK(b.events().size() == 120);
}

TEST_CASE("hooks: a body nested deeper than 64 levels is 400 before it is parsed; 64 levels work") {
  HookBench b;
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = b.post("anyone", deep, {{"content-type", "application/json"}});
  CHECK(r.status == 400);
  CHECK(r.body.dump().find("64 levels") != std::string::npos);
  CHECK(b.post("anyone", std::string(65, '[') + std::string(65, ']'), {}).status == 400);
  CHECK(b.events().empty());
  CHECK(b.post("anyone", std::string(64, '[') + std::string(64, ']'), {}).status == 202);
  CHECK(b.events().size() == 1);
}

TEST_CASE("hooks: a signed body with a NUL byte is 400, not the JSON before the NUL") {
  using namespace std::string_literals;
  HookBench b;
  for (const std::string& body : {"{\"a\":1}\0{\"b\":2}"s, "{\"a\":1}\0"s}) {
    auto r = b.post("gh", body, {{"x-hub-signature-256", "sha256=" + hmacHex(kSecret, body)}});
    CHECK(r.status == 400);
  }
  CHECK(b.events().empty());
  std::string twin = R"({"a":"\u0000"})";  // an escaped NUL is JSON
  CHECK(b.post("gh", twin, {{"x-hub-signature-256", "sha256=" + hmacHex(kSecret, twin)}}).status == 202);
  CHECK(b.events().size() == 1);
}

TEST_CASE("hooks: a form field that is not UTF-8 once decoded is 400, not an internal error") {
  HookBench b;
  const std::map<std::string, std::string> form = {{"content-type", "application/x-www-form-urlencoded"}};
  auto r = b.post("anyone", "a=%FF", form);
  CHECK(r.status == 400);
  CHECK(r.body.dump().find("UTF-8") != std::string::npos);
  CHECK(b.post("anyone", "%C0%AF=x", form).status == 400);
  CHECK(b.events().empty());
  CHECK(b.post("anyone", "a=%C3%A9t%C3%A9", form).status == 202);  // "été"
  REQUIRE(b.events().size() == 1);
  CHECK(nlohmann::json::parse(b.events()[0].payload)["a"] == "\u00e9t\u00e9");
}

TEST_CASE("hooks: a form body becomes a JSON object; an open hook takes anyone; other types 415") {
  HookBench b;
  auto r = b.post("anyone", "a=1&b=two+words&b=%21", {{"content-type", "application/x-www-form-urlencoded; charset=utf-8"}});
  CHECK(r.status == 202);
  auto ev = b.events();
  REQUIRE(ev.size() == 1);
  CHECK(nlohmann::json::parse(ev[0].payload) == nlohmann::json::parse(R"({"a":"1","b":["two words","!"]})"));
  CHECK(ev[0].topic == "open/x");
  // Spaces or a tab before the parameters: the same types.
  CHECK(b.post("anyone", "{}", {{"content-type", "application/json\t; charset=utf-8"}}).status == 202);
  CHECK(b.post("anyone", "{}", {{"content-type", "application/vnd.x+json \t;a=b"}}).status == 202);
  CHECK(b.post("anyone", "a=1", {{"content-type", "application/x-www-form-urlencoded\t;charset=utf-8"}}).status == 202);
  CHECK(b.post("anyone", "<x/>", {{"content-type", "text/xml\t; charset=utf-8"}}).status == 415);
  CHECK(b.post("anyone", "<x/>", {{"content-type", "text/xml"}}).status == 415);
  CHECK(b.post("anyone", "{not json", {{"content-type", "application/json"}}).status == 400);
  CHECK(b.checks == 0);  // an open hook never asks pined
}

TEST_CASE("hooks: a timestamped scheme with its own header and prefix, within the tolerance") {
  HookBench b;
  std::string body = R"({"t":1})";
  std::string ts = std::to_string(b.now / 1000);
  CHECK(b.post("stamp", body, {{"x-sig", "v1=" + hmacHex(kSecret, ts + "." + body)}, {"x-time", ts}}).status == 202);
  std::string old = std::to_string(b.now / 1000 - 120);
  CHECK(b.post("stamp", body, {{"x-sig", "v1=" + hmacHex(kSecret, old + "." + body)}, {"x-time", old}}).status == 401);
  CHECK(b.post("stamp", body, {{"x-sig", "v1=" + hmacHex(kSecret, ts + "." + body)}}).status == 401);  // no time
  CHECK(b.post("stamp", body, {{"x-sig", "v1=" + hmacHex(kSecret, body)}, {"x-time", ts}}).status == 401);
  CHECK(b.events().size() == 1);
}

TEST_CASE("hooks: refusals are audited 300 a minute, then counted; deliveries are audited all the same") {
  HookBench b;
  const std::string auditFile = b.root + "/data/logs/audit.jsonl";
  auto count = [&](const std::string& needle) {
    std::string a = slurp(auditFile);
    size_t n = 0;
    for (size_t p = a.find(needle); p != std::string::npos; p = a.find(needle, p + 1)) ++n;
    return n;
  };
  // A stranger's requests to made-up hooks, and wrong tokens past the hook's minute: each refused.
  for (int i = 0; i < 350; ++i) REQUIRE(b.post("made-up-" + std::to_string(i), "{}", {}).status == 404);
  CHECK(count("\"hook.refused\"") == 300);
  // The made-up names used up their own budget, not the configured hooks'.
  for (int i = 0; i < 350; ++i) REQUIRE(b.post("ha", "{}", {{"authorization", "Bearer wrong"}}).status / 100 == 4);
  CHECK(count("\"hook.refused\"") == 600);
  CHECK(count("\"hook\":\"ha\"") == 300);
  // The sender's deliveries meanwhile: answered and audited, whatever the refusals used.
  for (int i = 0; i < 3; ++i) REQUIRE(b.post("ha", "{\"n\":" + std::to_string(i) + "}", {{"authorization", "Bearer " + kSecret}}).status == 202);
  CHECK(count("\"hook.received\"") == 3);
  // The next minute: the count of what was not audited, then refusals again.
  b.now += 60'000;
  CHECK(b.post("made-up", "{}", {}).status == 404);
  CHECK(b.post("ha", "{}", {{"authorization", "Bearer wrong"}}).status == 401);
  CHECK(count("\"hook.refusals_not_audited\"") == 2);
  CHECK(count("\"count\":50") == 2);
  CHECK(count("\"hooks\":\"unknown\"") == 1);
  CHECK(count("\"hooks\":\"configured\"") == 1);
  CHECK(count("\"hook.refused\"") == 602);
}

TEST_CASE("hooks: a secret sent as a hook's name is not written to the audit log; a mistyped name is") {
  HookBench b;
  const std::string auditFile = b.root + "/data/logs/audit.jsonl";
  // A "secret URL" (/hooks/<secret>) from a sender that knows the secret, not the hook's name.
  const std::string secretPath = "hooksecret-abcdefghijklmnop0123";
  CHECK(b.post(secretPath, "{}", {}).status == 404);
  CHECK(b.post(kSecret, "{}", {}).status == 404);
  std::string audit = slurp(auditFile);
  CHECK(audit.find(secretPath) == std::string::npos);  // before: "hook":"hooksecret-abc..."
  CHECK(audit.find(kSecret) == std::string::npos);
  CHECK(audit.find("(a name of 31 bytes, not like any hook's)") != std::string::npos);
  // The twin: a slip of a configured name ("gh", "ha", "stamp") is shown as it came.
  CHECK(b.post("stamps", "{}", {}).status == 404);
  CHECK(b.post("gj", "{}", {}).status == 404);
  audit = slurp(auditFile);
  CHECK(audit.find("\"hook\":\"stamps\"") != std::string::npos);
  CHECK(audit.find("\"hook\":\"gj\"") != std::string::npos);
}

TEST_CASE("hooks: a stranger's content type and delivery ids are not written as sent") {
  HookBench b;
  const std::string secretish = "3f9a1c0d5e7b2a4c6d8e0f1a3b5c7d9e";
  CHECK(b.post("anyone", "x", {{"content-type", "a/" + secretish}}).status == 415);
  CHECK(b.post("anyone", "{\"x\":1}", {{"content-type", "application/json"}, {"x-request-id", secretish}}).status == 202);
  CHECK(b.post("anyone", "{\"x\":1}", {{"content-type", "application/json"}, {"x-request-id", secretish}}).status == 200);
  CHECK(b.events().size() == 1);  // the twin: still known as a repeat (200, not delivered again)
  const std::string audit = slurp(b.root + "/data/logs/audit.jsonl");
  CHECK(audit.find(secretish) == std::string::npos);  // before: "content type a/3f9a..."
  CHECK(audit.find("a content type of 34 bytes") != std::string::npos);
  const std::string db = slurp(b.root + "/data/pine.db") + slurp(b.root + "/data/pine.db-wal");
  CHECK(db.find(secretish) == std::string::npos);  // before: the id as a key in hook_deliveries
}

TEST_CASE("hooks: the secret never reaches the audit log or the database; refusals say why") {
  std::string root;
  {
    HookBench b;
    root = b.root;
    std::string body = R"({"s":1})";
    b.post("gh", body, {{"x-hub-signature-256", "sha256=" + hmacHex(kSecret, body)}});
    b.post("gh", body, {{"x-hub-signature-256", "sha256=00"}});
    b.post("ha", body, {{"authorization", "Bearer " + kSecret}});
    b.post("ha", body, {{"authorization", "Bearer wrong-" + kSecret}});
    std::string audit = slurp(root + "/data/logs/audit.jsonl");
    CHECK(audit.find("hook.received") != std::string::npos);
    CHECK(audit.find("hook.refused") != std::string::npos);
    CHECK(audit.find("wrong bearer token") != std::string::npos);
    CHECK(audit.find(kSecret) == std::string::npos);
    CHECK(audit.find(hmacHex(kSecret, body)) == std::string::npos);
    std::string db = slurp(root + "/data/pine.db") + slurp(root + "/data/pine.db-wal");
    CHECK(db.find(kSecret) == std::string::npos);
    CHECK(db.find(hmacHex(kSecret, body)) == std::string::npos);
  }
}
