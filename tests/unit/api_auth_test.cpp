#include <doctest/doctest.h>

#include "broker/api_auth.h"

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
