// POST /hooks/<name>: the HTTP side only (the secret is checked behind the backend, by pined).
#include <doctest/doctest.h>

#include "tests/api/harness.h"

using namespace pine::apitest;

TEST_CASE("hooks: no control token; headers and the raw body reach the backend") {
  ApiServer s;
  std::string body = R"({"a":1})";
  auto r = roundTrip(s, request(s, "POST", "/hooks/gh", body,
                                {"Content-Type: application/json", "X-Hub-Signature-256: sha256=abc",
                                 "X-GitHub-Delivery: d-1"},
                                true, false));
  CHECK(r.status == 202);
  CHECK(r.j["event"] == "ev-1");
  std::string hdrs, got;
  s.run([&](FakeBackend& b) {
    REQUIRE(b.hooks.size() == 1);
    got = b.hooks[0].second.body;
    hdrs = b.hooks[0].second.headers["x-hub-signature-256"] + "|" + b.hooks[0].second.headers["x-github-delivery"];
  });
  CHECK(got == body);
  CHECK(hdrs == "sha256=abc|d-1");  // names lower-cased, values as sent
}

TEST_CASE("hooks: an unknown name is 404 without reading the body; GET is 405; a bad name 404") {
  ApiServer s;
  CHECK(roundTrip(s, request(s, "POST", "/hooks/nope", "{}", {}, true, false)).status == 404);
  CHECK(roundTrip(s, request(s, "GET", "/hooks/gh", "", {}, true, false)).status == 405);
  CHECK(roundTrip(s, request(s, "POST", "/hooks/a%2Fb", "{}", {}, true, false)).status == 404);
  CHECK(roundTrip(s, request(s, "POST", "/hooks/gh/x", "{}", {}, true, false)).status == 404);
}

TEST_CASE("hooks: a body over the hook's cap is 413 and never reaches the backend") {
  ApiServer s;
  auto r = roundTrip(s, request(s, "POST", "/hooks/gh", std::string(65, 'x'), {}, true, false));
  CHECK(r.status == 413);
  size_t n = 1;
  s.run([&](FakeBackend& b) { n = b.hooks.size(); });
  CHECK(n == 0);
}

TEST_CASE("hooks: the backend's 429 carries Retry-After") {
  ApiServer s;
  auto r = roundTrip(s, request(s, "POST", "/hooks/gh", "flood", {}, true, false));
  CHECK(r.status == 429);
  CHECK(r.head.find("retry-after: 17") != std::string::npos);
}

TEST_CASE("hooks: a browser (Origin) and a wrong Host are refused as on every route") {
  ApiServer s;
  CHECK(roundTrip(s, request(s, "POST", "/hooks/gh", "{}", {"Origin: http://evil.example"}, true, false)).status == 403);
  CHECK(roundTrip(s, request(s, "POST", "/hooks/gh", "{}", {"Host: evil.example"}, false, false)).status != 202);
}
