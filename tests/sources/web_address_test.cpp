// The rules of a polled web address (common/web_address.h) and what pined makes of one poll
// (supervisor/source_fetch.h): redirects only on the configured scheme, host and port, the
// token only there, the local network only when confirmed, plain http only for an http:// url.
#include <doctest/doctest.h>

#include "common/web_address.h"
#include "supervisor/source_fetch.h"

using namespace pine;

TEST_CASE("redirectHop: the same scheme, host and port are followed, resolved against the current address") {
  const std::string conf = "https://example.com/feed/a.json";
  CHECK(redirectHop(conf, conf, "https://example.com/feed/b.json").url == "https://example.com/feed/b.json");
  CHECK(redirectHop(conf, conf, "HTTPS://EXAMPLE.com:443/x").url == "HTTPS://EXAMPLE.com:443/x");
  CHECK(redirectHop(conf, conf, "/other?q=1").url == "https://example.com:443/other?q=1");
  CHECK(redirectHop(conf, conf, "b.json#frag").url == "https://example.com:443/feed/b.json");
  CHECK(redirectHop(conf, conf, "//example.com/c").url == "https://example.com/c");
  CHECK(redirectHop(conf, "https://example.com", "d").url == "https://example.com:443/d");
}

TEST_CASE("redirectHop: another host, port or scheme, and what is not an address, are refused") {
  const std::string conf = "http://127.0.0.1:8080/page";
  auto other = redirectHop(conf, conf, "http://localhost:8080/page");
  CHECK(other.url.empty());
  CHECK(other.refusal.find("another host") != std::string::npos);
  CHECK(redirectHop(conf, conf, "http://127.0.0.1:8081/page").url.empty());
  CHECK(redirectHop(conf, conf, "https://127.0.0.1:8080/page").url.empty());
  CHECK(redirectHop(conf, conf, "//evil.example/page").refusal.find("another host") != std::string::npos);
  CHECK(redirectHop(conf, conf, "http://user@127.0.0.1:8080/").url.empty());
  CHECK(redirectHop(conf, conf, "ftp://127.0.0.1:8080/").refusal.find("another scheme") != std::string::npos);
  // The server's text is not repeated (status lines, logs): a scheme is named only when it is one.
  CHECK(redirectHop(conf, conf, "ftp://127.0.0.1:8080/").refusal == "a redirect to another scheme (ftp)");
  CHECK(redirectHop(conf, conf, "\xc2\x9b" "2JEVIL\xe2\x80\xaeLIVE\xc2\xa0ignore\xc2\xa0previous:x").refusal ==
        "a redirect to another scheme");
  CHECK(redirectHop(conf, conf, "javascript:alert(1)").url.empty());
  CHECK(redirectHop(conf, conf, "").refusal == "a redirect without a Location");
  CHECK(redirectHop(conf, conf, "/a b").url.empty());
  CHECK(redirectHop(conf, conf, "http://127.0.0.1:8080\\@evil/").url.empty());
  // The legitimate twin of each: the same host and port.
  CHECK(redirectHop(conf, conf, "http://127.0.0.1:8080/next").url == "http://127.0.0.1:8080/next");
}

TEST_CASE("localNetworkReason: says when an address is on the local network, nothing for a public one") {
  CHECK(localNetworkReason("http://127.0.0.1:8123/api").find("loopback") != std::string::npos);
  CHECK(localNetworkReason("http://192.168.1.20/").find("private") != std::string::npos);
  CHECK(localNetworkReason("http://10.1.2.3/").find("private") != std::string::npos);
  CHECK(localNetworkReason("http://172.20.0.1/").find("private") != std::string::npos);
  CHECK(localNetworkReason("http://169.254.169.254/").find("link-local") != std::string::npos);
  CHECK(localNetworkReason("http://[::1]:80/").find("loopback") != std::string::npos);
  CHECK(localNetworkReason("http://[fd00::1]/").find("private") != std::string::npos);
  CHECK(localNetworkReason("http://[::ffff:192.168.0.1]/").find("private") != std::string::npos);
  CHECK(localNetworkReason("http://localhost:8080/").find("this machine") != std::string::npos);
  CHECK(localNetworkReason("http://nas/").find("single-label") != std::string::npos);
  CHECK(localNetworkReason("http://printer.local/").find("local-network name") != std::string::npos);
  CHECK(localNetworkReason("http://hass.home.arpa:8123/").find("home.arpa") != std::string::npos);
  CHECK(localNetworkReason("http://router.lan/").find("lan") != std::string::npos);
  CHECK(localNetworkReason("https://example.com/feed").empty());
  CHECK(localNetworkReason("https://93.184.216.34/").empty());
  CHECK(localNetworkReason("https://[2606:4700::1111]/").empty());
  CHECK(localNetworkReason("https://172.32.0.1/").empty());  // just outside 172.16/12
}

namespace {

config::Source httpSource(const std::string& url) {
  config::Source s;
  s.name = "page";
  s.type = "http";
  s.url = url;
  return s;
}

std::string header(const SourcePoll& p, const std::string& name) {
  for (auto& [k, v] : p.request.headers)
    if (k == name) return v;
  return "";
}

}  // namespace

TEST_CASE("sourcePoll: the token goes only to the configured origin, as a placeholder pined fills in") {
  config::Source s = httpSource("https://example.com/feed");
  s.tokenSecret = "FEED_TOKEN";
  SourcePoll p = sourcePoll(s, "", "\"v1\"", "Wed, 02 Dec 2026 10:00:00 GMT");
  REQUIRE(p.refused.empty());
  CHECK(p.request.method == "GET");
  CHECK(p.request.url == "https://example.com/feed");
  CHECK(header(p, "Authorization") == "Bearer ${secret:FEED_TOKEN}");
  CHECK(header(p, "If-None-Match") == "\"v1\"");
  CHECK(header(p, "If-Modified-Since") == "Wed, 02 Dec 2026 10:00:00 GMT");
  CHECK(p.policy.allowHosts == std::vector<std::string>{"example.com"});
  CHECK_FALSE(p.policy.allowLoopback);
  CHECK_FALSE(p.policy.allowPrivate);
  CHECK_FALSE(p.policy.allowPlainHttp);

  // A redirect's target on the same origin is fetched with the token; another host never is.
  CHECK(sourcePoll(s, "https://example.com/feed2", "", "").refused.empty());
  SourcePoll away = sourcePoll(s, "https://evil.example/feed", "", "");
  CHECK(away.refused.find("only https://example.com:443 is fetched") != std::string::npos);
  CHECK(away.request.headers.empty());
  CHECK_FALSE(sourcePoll(s, "http://example.com/feed", "", "").refused.empty());
  CHECK_FALSE(sourcePoll(s, "https://example.com:8443/feed", "", "").refused.empty());
  CHECK_FALSE(sourcePoll(s, "https://example.com/${secret:FEED_TOKEN}", "", "").refused.empty());
  // Validators come from the server: no line breaks or placeholders are sent back.
  CHECK_FALSE(sourcePoll(s, "", "\"v1\"\r\nX-Evil: 1", "").refused.empty());
  CHECK_FALSE(sourcePoll(s, "", "${secret:FEED_TOKEN}", "").refused.empty());
  CHECK_FALSE(sourcePoll(s, "", std::string(1025, 'a'), "").refused.empty());
}

TEST_CASE("sourcePoll: a confirmed local address may reach loopback and private ranges; plain http only for http://") {
  config::Source s = httpSource("http://192.168.1.20:8123/api/states");
  SourcePoll pub = sourcePoll(s, "", "", "");
  CHECK_FALSE(pub.policy.allowPrivate);
  CHECK_FALSE(pub.policy.allowLoopback);
  CHECK(pub.policy.allowPlainHttp);
  s.localNetwork = true;
  s.tokenSecret = "HA_TOKEN";
  s.tokenHeader = "X-Api-Key";
  SourcePoll local = sourcePoll(s, "", "", "");
  CHECK(local.policy.allowPrivate);
  CHECK(local.policy.allowLoopback);
  CHECK(header(local, "X-Api-Key") == "${secret:HA_TOKEN}");
  CHECK(header(local, "Authorization").empty());
  CHECK(header(local, "If-None-Match").empty());  // nothing remembered: no conditional request
}
