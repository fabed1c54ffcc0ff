#include <doctest/doctest.h>

#include "broker/api_auth.h"
#include "common/names.h"

using pine::ApiRequestFacts;
using pine::checkApiRequest;

static const std::string kToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static ApiRequestFacts req(std::string method, std::string path, std::string auth = "") {
  ApiRequestFacts f;
  f.method = method;
  f.path = path;
  f.authorization = auth;
  return f;
}

TEST_CASE("the token is required on every route except GET /health") {
  CHECK_FALSE(checkApiRequest(req("GET", "/health"), kToken));
  auto r = checkApiRequest(req("GET", "/v1/status"), kToken);
  REQUIRE(r);
  CHECK(r->status == 401);
  CHECK(checkApiRequest(req("POST", "/health"), kToken)->status == 401);  // only GET is open
  CHECK_FALSE(checkApiRequest(req("GET", "/v1/status", "Bearer " + kToken), kToken));
}

TEST_CASE("wrong, truncated, extended or differently-schemed tokens are refused") {
  CHECK(checkApiRequest(req("GET", "/v1/status", "Bearer " + kToken.substr(1)), kToken)->status == 401);
  CHECK(checkApiRequest(req("GET", "/v1/status", "Bearer " + kToken + "0"), kToken)->status == 401);
  CHECK(checkApiRequest(req("GET", "/v1/status", "Basic " + kToken), kToken)->status == 401);
  CHECK(checkApiRequest(req("GET", "/v1/status", "bearer" + kToken), kToken)->status == 401);
  CHECK(checkApiRequest(req("GET", "/v1/status", "Bearer "), kToken)->status == 401);
  CHECK(checkApiRequest(req("GET", "/v1/status", "Bearer x"), "")->status == 401);  // no token configured: nothing matches
  CHECK(checkApiRequest(req("GET", "/v1/status", "bearer " + kToken.substr(1)), kToken)->status == 401);
  // The scheme's name is not case-sensitive (RFC 9110 11.1); the token is.
  CHECK_FALSE(checkApiRequest(req("GET", "/v1/status", "bearer " + kToken), kToken));
  CHECK_FALSE(checkApiRequest(req("GET", "/v1/status", "BEARER " + kToken), kToken));
  CHECK_FALSE(checkApiRequest(req("GET", "/v1/status", "Bearer " + kToken + " \t"), kToken));  // around the value: not of it
  CHECK(checkApiRequest(req("GET", "/v1/status", "Bearer " + kToken + " x"), kToken)->status == 401);
}

TEST_CASE("requests a browser makes are refused, even with the right token") {
  auto f = req("GET", "/v1/status", "Bearer " + kToken);
  f.hasOrigin = true;
  CHECK(checkApiRequest(f, kToken)->status == 403);
  f.hasOrigin = false;
  f.hasSecFetchSite = true;
  CHECK(checkApiRequest(f, kToken)->status == 403);
  auto h = req("GET", "/health");
  h.hasOrigin = true;
  CHECK(checkApiRequest(h, kToken)->status == 403);
}

TEST_CASE("a token in the query string is refused, whatever the key's case") {
  auto f = req("GET", "/v1/status", "Bearer " + kToken);
  f.query = "a=1&Token=" + kToken;
  CHECK(checkApiRequest(f, kToken)->status == 400);
  f.query = "access_token=x";
  CHECK(checkApiRequest(f, kToken)->status == 400);
  f.query = "tokens=3&limit=5";  // a different key that merely starts alike is fine
  CHECK_FALSE(checkApiRequest(f, kToken));
}

TEST_CASE("tokenEquals compares whole values") {
  CHECK(pine::tokenEquals("abc", "abc"));
  CHECK_FALSE(pine::tokenEquals("abc", "abd"));
  CHECK_FALSE(pine::tokenEquals("abc", "abcd"));
  CHECK_FALSE(pine::tokenEquals("", ""));
}

using pine::ApiListener;
using pine::checkBodyFraming;
using pine::checkHost;
using pine::checkPath;

TEST_CASE("Host on TCP: only 127.0.0.1 or localhost with the bound port") {
  CHECK_FALSE(checkHost(std::string("127.0.0.1:8421"), ApiListener::Tcp, 8421));
  CHECK_FALSE(checkHost(std::string("localhost:8421"), ApiListener::Tcp, 8421));
  CHECK_FALSE(checkHost(std::string("LOCALHOST:8421"), ApiListener::Tcp, 8421));
  CHECK_FALSE(checkHost(std::string("localhost:8421 \t"), ApiListener::Tcp, 8421));  // trailing white space
  CHECK(checkHost(std::nullopt, ApiListener::Tcp, 8421)->status == 403);
  CHECK(checkHost(std::string("evil.example:8421"), ApiListener::Tcp, 8421)->status == 403);
  CHECK(checkHost(std::string("127.0.0.1:8422"), ApiListener::Tcp, 8421)->status == 403);
  CHECK(checkHost(std::string("127.0.0.1:08421"), ApiListener::Tcp, 8421)->status == 403);
  CHECK(checkHost(std::string("127.0.0.1"), ApiListener::Tcp, 8421)->status == 403);
  CHECK(checkHost(std::string("127.0.0.1:8421, evil"), ApiListener::Tcp, 8421)->status == 403);  // two Host headers
  CHECK(checkHost(std::string("localhost.evil.example:8421"), ApiListener::Tcp, 8421)->status == 403);
}

TEST_CASE("Host on the unix socket: localhost, any port or none") {
  CHECK_FALSE(checkHost(std::string("localhost"), ApiListener::Unix, 0));
  CHECK_FALSE(checkHost(std::string("localhost:80"), ApiListener::Unix, 0));
  CHECK(checkHost(std::string("localhost:"), ApiListener::Unix, 0)->status == 403);
  CHECK(checkHost(std::string("localhost:x"), ApiListener::Unix, 0)->status == 403);
  CHECK(checkHost(std::string("127.0.0.1"), ApiListener::Unix, 0)->status == 403);
  CHECK(checkHost(std::nullopt, ApiListener::Unix, 0)->status == 403);
}

TEST_CASE("paths: dot segments, empty segments, encoded separators and raw control bytes are refused") {
  for (const char* bad : {"", "v1/status", "/v1/../status", "/v1/%2e%2E/x", "/v1/./x", "/v1//x", "/v1/x/", "/a%2Fb",
                          "/a%5cb", "/a%00b", "/a%zz", "/a%2", "/a b", "/a\tb", "http://h/v1/status"})
    CHECK_MESSAGE(checkPath(bad).has_value(), bad);
  for (const char* good : {"/", "/health", "/v1/status", "/v1/state/a.b:c-d_e", "/v1/state/a%3Ab", "/v1/agents/x/mode"})
    CHECK_MESSAGE(!checkPath(good).has_value(), good);
  CHECK(checkPath("/" + std::string(3000, 'a'))->status == 400);
}

TEST_CASE("body framing: one Content-Length under the limit, or chunked alone") {
  std::optional<uint64_t> n;
  CHECK_FALSE(checkBodyFraming(std::string("10"), std::nullopt, 100, &n));
  CHECK(n == 10u);
  CHECK_FALSE(checkBodyFraming(std::nullopt, std::nullopt, 100, &n));
  CHECK(n == 0u);
  CHECK_FALSE(checkBodyFraming(std::nullopt, std::string("Chunked"), 100, &n));
  CHECK_FALSE(n.has_value());
  CHECK(checkBodyFraming(std::string("101"), std::nullopt, 100, &n)->status == 413);
  CHECK(checkBodyFraming(std::string("10, 10"), std::nullopt, 100, &n)->status == 400);
  CHECK(checkBodyFraming(std::string("10, 11"), std::nullopt, 100, &n)->status == 400);
  CHECK(checkBodyFraming(std::string("+10"), std::nullopt, 100, &n)->status == 400);
  CHECK(checkBodyFraming(std::string(""), std::nullopt, 100, &n)->status == 400);
  CHECK(checkBodyFraming(std::string("99999999999999999999999"), std::nullopt, 100, &n)->status == 400);
  CHECK(checkBodyFraming(std::string("10"), std::string("chunked"), 100, &n)->status == 400);
  CHECK(checkBodyFraming(std::nullopt, std::string("gzip, chunked"), 100, &n)->status == 400);
}

TEST_CASE("state keys, approval ids and percent-decoding") {
  CHECK(pine::isValidStateKey("house.temp:kitchen-1_a"));
  CHECK_FALSE(pine::isValidStateKey(""));
  CHECK_FALSE(pine::isValidStateKey(".hidden"));
  CHECK_FALSE(pine::isValidStateKey("-flag"));
  CHECK(pine::isValidStateKey("house/door"));
  CHECK_FALSE(pine::isValidStateKey("/a"));
  CHECK_FALSE(pine::isValidStateKey("a//b"));
  CHECK_FALSE(pine::isValidStateKey("a/../b"));
  CHECK_FALSE(pine::isValidStateKey("a/"));
  CHECK_FALSE(pine::isValidStateKey(std::string(129, 'k')));
  CHECK(pine::isValidStateKey(std::string(128, 'k')));
  CHECK(pine::isValidApprovalId("a_1-B"));
  CHECK_FALSE(pine::isValidApprovalId("a.1"));
  CHECK(pine::percentDecode("a%2Fb+c", true) == std::optional<std::string>("a/b c"));
  CHECK(pine::percentDecode("a+c", false) == std::optional<std::string>("a+c"));
  CHECK_FALSE(pine::percentDecode("%4", false));
  CHECK_FALSE(pine::percentDecode("%g0", false));
}
