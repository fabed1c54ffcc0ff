// web/host_rules and web/url: which hosts fetch may read (allowHosts, denyHosts) and which
// addresses are fetch's at all (http and https only).
#include <doctest/doctest.h>

#include "web/host_rules.h"
#include "web/url.h"

using namespace pine::web;

TEST_CASE("host patterns: exact names and *.domain, without case or trailing dot") {
  CHECK(hostMatches("example.org", "example.org"));
  CHECK(hostMatches("Example.ORG.", "example.org"));
  CHECK_FALSE(hostMatches("www.example.org", "example.org"));
  CHECK(hostMatches("www.example.org", "*.example.org"));
  CHECK(hostMatches("a.b.example.org", "*.example.org"));
  CHECK_FALSE(hostMatches("example.org", "*.example.org"));
  CHECK_FALSE(hostMatches("badexample.org", "*.example.org"));
  CHECK_FALSE(hostMatches("example.org.evil.com", "*.example.org"));
  CHECK_FALSE(hostMatches("", "*"));
}

TEST_CASE("allowHosts admits only its names; denyHosts refuses and wins") {
  CHECK_FALSE(hostRefusal("any.example", {}, {}));
  auto refused = hostRefusal("other.example", {"docs.example", "*.wiki.example"}, {});
  REQUIRE(refused);
  CHECK(refused->find("not in allowHosts") != std::string::npos);
  CHECK_FALSE(hostRefusal("docs.example", {"docs.example", "*.wiki.example"}, {}));
  CHECK_FALSE(hostRefusal("en.wiki.example", {"docs.example", "*.wiki.example"}, {}));
  auto denied = hostRefusal("ads.wiki.example", {"*.wiki.example"}, {"ads.wiki.example"});
  REQUIRE(denied);
  CHECK(denied->find("in denyHosts (ads.wiki.example)") != std::string::npos);
  CHECK(hostRefusal("x.tracker.example", {}, {"*.tracker.example"}));
}

TEST_CASE("fetch addresses: http and https only, a host required; relative references resolved") {
  std::string why;
  auto p = parseWebUrl("HTTPS://Example.ORG./a?b#c", why);
  REQUIRE(p);
  CHECK(p->scheme == "https");
  CHECK(p->host == "example.org");
  CHECK_FALSE(parseWebUrl("file:///etc/passwd", why));
  CHECK(why.find("only http and https") != std::string::npos);
  CHECK_FALSE(parseWebUrl("ftp://example.org/x", why));
  CHECK_FALSE(parseWebUrl("gopher://example.org/x", why));
  CHECK_FALSE(parseWebUrl("/relative", why));
  CHECK_FALSE(parseWebUrl("", why));
  auto v6 = parseWebUrl("http://[::1]:8080/", why);
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(resolveUrl("https://a.example/x/y", "../z") == "https://a.example/z");
  CHECK(resolveUrl("https://a.example/x/y", "//b.example/q") == "https://b.example/q");
  CHECK(resolveUrl("https://a.example/x/y", "http://127.0.0.1/") == "http://127.0.0.1/");
  CHECK(queryEscape("a b&c=d/é") == "a%20b%26c%3Dd%2F%C3%A9");
}
