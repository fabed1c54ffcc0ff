// Webhooks through the real process tree: the broker takes POST /hooks/<name>, pined checks the
// HMAC with the secret only it holds, one event is committed; the secret stays out of the
// broker's log, the audit log and the database; a short secret is refused by reload and check.
#include <doctest/doctest.h>
#include <openssl/hmac.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/cloexec.h"
#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

const std::string kHookSecret = "it-hook-secret-5f2c9a7d1e";

std::string hookHmac(const std::string& key, const std::string& text) {
  unsigned char mac[32];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), (int)key.size(), (const unsigned char*)text.data(), text.size(), mac, &n);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) out += {hex[mac[i] >> 4], hex[mac[i] & 15]};
  return out;
}

std::string everyFileUnder(const std::string& dir) {
  std::string all;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) all += readText(e.path().string());
  return all;
}

}  // namespace

TEST_CASE("webhook: pined checks the HMAC, one event per delivery, the secret nowhere in the broker's files") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  REQUIRE(pined.ctl({"secret", "set", "GH_HOOK"}, kHookSecret + "\n").exitCode == 0);
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nwebhooks:\n  - {name: gh, topic: ci/github, secret: GH_HOOK, auth: hmac}\n";
  auto r = pined.ctl({"reload"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);

  std::string body = R"({"action":"push","ref":"main"})";
  std::string sig = "X-Hub-Signature-256: sha256=" + hookHmac(kHookSecret, body);
  CHECK(postHook(home, "gh", body, {sig, "X-GitHub-Delivery: it-1"}) == 202);
  CHECK(postHook(home, "gh", body, {sig, "X-GitHub-Delivery: it-1"}) == 200);  // the sender's retry
  CHECK(postHook(home, "gh", body, {"X-Hub-Signature-256: sha256=" + hookHmac("not-the-secret-0123", body)}) == 401);
  CHECK(postHook(home, "nope", body, {sig}) == 404);
  auto events = pined.api("GET", "/v1/events?topic=ci/github").json();
  REQUIRE(events["events"].size() == 1);
  CHECK(events["events"][0]["trust"] == "untrusted");
  CHECK(events["events"][0]["payload"]["ref"] == "main");
  CHECK(pined.auditEvents("hook.received").size() == 2);
  CHECK(pined.auditEvents("hook.refused").size() == 2);

  pined.stop();
  std::string files = everyFileUnder(home + "/data");  // logs, audit log, database
  CHECK_FALSE(contains(files, kHookSecret));
  CHECK_FALSE(contains(files, hookHmac(kHookSecret, body)));
}

TEST_CASE("webhook: a secret under 16 bytes is refused by reload and by check, with the line") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  pined.ctl({"secret", "set", "GH_HOOK"}, "short\n");  // stored; its reload names no hook yet
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nwebhooks:\n  - name: gh\n    topic: ci/github\n    secret: GH_HOOK\n";
  auto r = pined.ctl({"reload"});
  CHECK(r.exitCode == 2);
  CHECK(contains(r.err, "shorter than 16 bytes"));
  auto c = run({binDir() + "/pinectl", "--home", home, "check"});
  CHECK(c.exitCode == 2);
  CHECK(contains(c.out + c.err, "pine.yaml:"));
  CHECK(contains(c.out + c.err, "secret 'GH_HOOK' is shorter than 16 bytes"));
}

TEST_CASE("webhook: a secret rotated by editing .env is in force after pinectl reload, and the old one is refused") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  REQUIRE(pined.ctl({"secret", "set", "GH_HOOK"}, kHookSecret + "\n").exitCode == 0);
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nwebhooks:\n  - {name: gh, topic: ci/github, secret: GH_HOOK, auth: hmac}\n";
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  // A body of its own each time: the same signed body again would be a repeat (the replay window).
  auto post = [&](const std::string& key, int n) {
    const std::string body = "{\"n\":" + std::to_string(n) + "}";
    return postHook(home, "gh", body,
                    {"X-Hub-Signature-256: sha256=" + hookHmac(key, body), "X-GitHub-Delivery: r-" + std::to_string(n)});
  };
  REQUIRE(post(kHookSecret, 1) == 202);

  // The owner's editor, in place: the old line gives way to a new secret.
  const std::string rotated = "it-hook-secret-rotated-83b1c0";
  std::string env = readText(home + "/.env");
  auto at = env.find("GH_HOOK=");
  REQUIRE(at != std::string::npos);
  env.replace(at, env.find('\n', at) - at, "GH_HOOK=" + rotated);
  std::ofstream(home + "/.env", std::ios::trunc) << env;
  auto r = pined.ctl({"reload"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(post(kHookSecret, 2) == 401);
  CHECK(post(rotated, 3) == 202);
  CHECK(pined.api("GET", "/v1/events?topic=ci/github").json()["events"].size() == 2);
}
