// The bundled web server's `search` keys: a URL (https, or http to this machine only) and the
// .env name of its key; refused elsewhere with a position and a way out.
#include <doctest/doctest.h>

#include "tests/config/helpers.h"

using namespace pine::config;
using namespace pine::config::test;

namespace {
void scout(TempHome& h, const std::string& server) {
  h.write("agents/scout/agent.yaml", "description: x\nmcpServers:\n  web:\n" + server);
}
}  // namespace

TEST_CASE("web search: url and keySecret read; the key must be in .env; http only to this machine") {
  TempHome h;
  h.write(".env", "SEARCH_KEY=abcdefgh12345678\n");
  scout(h, "    bundled: web\n    search: {url: \"https://api.search.example/res/v1/web/search\", keySecret: SEARCH_KEY}\n");
  auto r = h.load();
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  CHECK(r.home->agents.at("scout").mcpServers.at("web").searchUrl == "https://api.search.example/res/v1/web/search");
  CHECK(r.home->agents.at("scout").mcpServers.at("web").searchKeySecret == "SEARCH_KEY");

  scout(h, "    bundled: web\n    search: {url: \"http://127.0.0.1:8080/s\", keySecret: SEARCH_KEY}\n");
  r = h.load();
  CHECK_MESSAGE(r.ok(), dump(r.errors));

  scout(h, "    bundled: web\n    search: {url: \"http://[::1]:8080/s\", keySecret: SEARCH_KEY}\n");
  r = h.load();
  CHECK_MESSAGE(r.ok(), dump(r.errors));
  scout(h, "    bundled: web\n    search: {url: \"http://localhost.search.example/s\", keySecret: SEARCH_KEY}\n");
  CHECK(findError(h.load().errors, "mcpServers.web.search.url", "would travel in clear"));

  scout(h, "    bundled: web\n    search: {url: \"http://search.example/s\", keySecret: SEARCH_KEY}\n");
  r = h.load();
  auto e = findError(r.errors, "mcpServers.web.search.url", "would travel in clear");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->line == 5);

  scout(h, "    bundled: web\n    search: {url: \"https://s.example/\", keySecret: NOT_THERE}\n");
  r = h.load();
  CHECK_MESSAGE(findError(r.errors, "", "NOT_THERE"), dump(r.errors));

  scout(h, "    bundled: web\n    search: {url: \"https://s.example/\"}\n");
  r = h.load();
  CHECK_MESSAGE(findError(r.errors, "", "keySecret"), dump(r.errors));

  scout(h, "    command: [x]\n    search: {url: \"https://s.example/\", keySecret: SEARCH_KEY}\n");
  r = h.load();
  CHECK_MESSAGE(findError(r.errors, "mcpServers.web.search", "bundled web server only"), dump(r.errors));
}

TEST_CASE("browser keys: the web rules apply to the browser too; a profile is a plain name") {
  TempHome h;
  scout(h, "    bundled: browser\n    allowHosts: [shop.example]\n    denyHosts: [ads.example]\n    allowPrivate: true\n"
           "    profile: shop_1\n");
  auto r = h.load();
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  const auto& s = r.home->agents.at("scout").mcpServers.at("web");
  CHECK(s.allowHosts == std::vector<std::string>{"shop.example"});
  CHECK(s.denyHosts == std::vector<std::string>{"ads.example"});
  CHECK(s.allowPrivate);
  CHECK(s.profile == "shop_1");
  for (const char* bad : {"../home", "a/b", "-x", "\"\""}) {
    scout(h, std::string("    bundled: browser\n    profile: ") + bad + "\n");
    r = h.load();
    auto e = findError(r.errors, "mcpServers.web.profile", "is not a profile name");
    CAPTURE(bad);
    REQUIRE_MESSAGE(e, dump(r.errors));
    CHECK(e->line == 5);
  }
  scout(h, "    command: [x]\n    allowPrivate: true\n");
  CHECK(findError(h.load().errors, "mcpServers.web.allowPrivate", "bundled web and browser servers only"));
}
