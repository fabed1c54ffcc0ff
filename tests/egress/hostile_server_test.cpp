// What a hostile or broken server can answer, against the HTTP code that pine-egress runs:
// each ends the request with an error that says what the server did, never a hang, a crash
// or an unbounded buffer; and the same client makes the next request as if nothing happened.
#include <doctest/doctest.h>

#include <string>

#include "egress/egress.h"
#include "tests/egress/bombs.h"
#include "tests/egress/egress_fixture.h"

using namespace pine::egress;
using namespace pine::egress::test;

namespace {

struct NoSecrets : SecretLookup {
  std::optional<std::string> get(std::string_view) const override { return std::nullopt; }
};

struct HostileResult {
  std::optional<std::string> error;
  long status = 0;
  std::string body;
  std::size_t headers = 0;
};

EgressPolicy hostilePolicy() {
  EgressPolicy p;
  p.allowLoopback = true;
  p.caFile = tls().caFile;
  p.connectTimeoutMs = 3000;
  p.totalTimeoutMs = 20000;
  p.maxResponseBytes = 1 << 20;
  return p;
}

HostileResult fetch(const TestServer& server, const std::string& path, const EgressPolicy& policy = hostilePolicy()) {
  static const pine::redact::Redactor redactor(std::vector<std::string>{});
  HostileResult r;
  EgressRequest req;
  req.url = "https://127.0.0.1:" + std::to_string(server.port()) + path;
  r.error = perform(
      req, policy, NoSecrets(), redactor,
      [&](const EgressResponseHead& h) {
        r.status = h.status;
        r.headers = h.headers.size();
      },
      [&](std::string_view chunk) {
        r.body.append(chunk);
        return true;
      });
  return r;
}

// After whatever came before, a plain request on the same server works.
void nextRequestWorks(const TestServer& server) {
  HostileResult ok = fetch(server, "/echo");
  CHECK_MESSAGE(!ok.error, ok.error.value_or(""));
  CHECK(ok.status == 200);
}

void endsWith(const TestServer& server, const std::string& path, const std::string& expect,
              const EgressPolicy& policy = hostilePolicy()) {
  CAPTURE(path);
  HostileResult r = fetch(server, path, policy);
  REQUIRE(r.error);
  CHECK_MESSAGE(r.error->find(expect) != std::string::npos, *r.error);
  CHECK(r.error->find("GET https://127.0.0.1:") == 0);  // says which request
  CHECK(r.body.size() <= policy.maxResponseBytes);
  nextRequestWorks(server);
}

}  // namespace

TEST_CASE("hostile: a malformed status line or header line") {
  TestServer server(&tls().server);
  endsWith(server, "/bad-status", "the server's answer is not valid HTTP");
  endsWith(server, "/bad-header", "the server's answer is not valid HTTP");
}

TEST_CASE("hostile: a huge header line, and headers over 256 KiB in all") {
  TestServer server(&tls().server);
  endsWith(server, "/huge-header?n=307200", "a response header line is longer than libcurl's limit of 100 KiB");
  endsWith(server, "/many-headers?n=300", "response headers larger than 262144 bytes");
  // Twin: many headers under the limit are fine.
  HostileResult ok = fetch(server, "/many-headers?n=100");
  CHECK_MESSAGE(!ok.error, ok.error.value_or(""));
  CHECK(ok.headers >= 100);
}

TEST_CASE("hostile: a body over the cap, with and without Content-Length") {
  TestServer server(&tls().server);
  endsWith(server, "/big?n=2000000", "response larger than 1048576 bytes");
  endsWith(server, "/big-chunked?n=2000000", "response larger than 1048576 bytes");
}

TEST_CASE("hostile: the connection closed mid-body") {
  TestServer server(&tls().server);
  endsWith(server, "/cut?n=1000", "the server closed the connection before the answer was complete");
  endsWith(server, "/cut-chunked", "the server closed the connection before the answer was complete");
}

TEST_CASE("hostile: a byte less often than the idle limit allows ends the transfer") {
  TestServer server(&tls().server);
  EgressPolicy policy = hostilePolicy();
  policy.idleTimeoutMs = 1000;
  // A byte every 3 s: under one byte a second, the least the idle rule lets through.
  endsWith(server, "/drip?n=20&gap=3000", "timed out", policy);
}

TEST_CASE("hostile: gzip, deflate and brotli bombs end at the cap on decoded bytes, early") {
  TestServer server(&tls().server);
  for (const char* encoding : {"gzip", "deflate", "br"}) {
    CAPTURE(encoding);
    Bomb bomb = makeBomb(encoding, 65536);  // 64 GiB of zeros
    server.setBomb(bomb);
    endsWith(server, "/bomb", "response larger than 1048576 bytes");
    // The encoded body is megabytes long (gzip, deflate): the client left after a few kilobytes.
    if (std::string(encoding) != "br") CHECK(server.bombSent() < bomb.encodedSize() / 2);
  }
}

TEST_CASE("hostile, twin: gzip, deflate and brotli under the cap are decoded in full") {
  TestServer server(&tls().server);
  for (const char* encoding : {"gzip", "deflate", "br"}) {
    CAPTURE(encoding);
    server.setBomb(makeBomb(encoding, 2));
    EgressPolicy policy = hostilePolicy();
    policy.maxResponseBytes = 4 << 20;
    HostileResult r = fetch(server, "/bomb", policy);
    REQUIRE_MESSAGE(!r.error, r.error.value_or(""));
    CHECK(r.body.size() == (2u << 20));
    CHECK(r.body.find_first_not_of('\0') == std::string::npos);
  }
}
