// The keys of an `http` source: the interval's floor of a minute, network (public or local),
// tokenHeader and topic, each refused with file:line when wrong and read when right.
#include <doctest/doctest.h>

#include "config/check.h"
#include "config/load.h"
#include "helpers.h"

using namespace pine::config;
using pine::config::test::dump;
using pine::config::test::findError;
using pine::config::test::TempHome;

namespace {

LoadResult loadSource(TempHome& h, const std::string& fields) {
  h.write("pine.yaml", "defaults: {model: demo}\nsources:\n  - name: page\n    type: http\n" + fields);
  h.write(".env", "PAGE_TOKEN=page-token-0123456789\n");
  return h.load();
}

}  // namespace

TEST_CASE("http source: an interval under a minute is refused at its line; a minute is accepted") {
  TempHome h;
  auto r = loadSource(h, "    url: https://example.com/feed\n    intervalSec: 59\n");
  auto* e = findError(r.errors, "sources[0].intervalSec");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->file == h.path("pine.yaml"));
  CHECK(e->line == 6);
  CHECK(e->format().find("pine.yaml:6:") != std::string::npos);
  CHECK(e->message.find("60") != std::string::npos);

  TempHome ok;
  r = loadSource(ok, "    url: https://example.com/feed\n    intervalSec: 60\n");
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  CHECK(r.home->pine.sources[0].intervalSec == 60);
}

TEST_CASE("http source: network is public or local; tokenHeader needs a token and may not be one pine sets") {
  TempHome h;
  auto r = loadSource(h, "    url: http://192.168.1.20:8123/api\n    network: lan\n");
  auto* e = findError(r.errors, "sources[0].network");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->message == "expected 'public' or 'local', got 'lan'");
  CHECK(e->line == 6);

  TempHome h2;
  r = loadSource(h2, "    url: https://example.com/feed\n    tokenHeader: X-Api-Key\n");
  CHECK(findError(r.errors, "sources[0].tokenHeader", "tokenHeader without tokenSecret"));

  TempHome h3;
  r = loadSource(h3, "    url: https://example.com/feed\n    tokenSecret: PAGE_TOKEN\n    tokenHeader: Host\n");
  CHECK(findError(r.errors, "sources[0].tokenHeader", "set by pine itself"));

  TempHome h4;
  r = loadSource(h4, "    url: https://example.com/feed\n    topic: state/x\n");
  CHECK(findError(r.errors, "sources[0].topic", "pine's own topic space"));

  TempHome good;
  r = loadSource(good, "    url: http://192.168.1.20:8123/api\n    network: local\n    tokenSecret: PAGE_TOKEN\n"
                       "    tokenHeader: X-Api-Key\n    topic: house/states\n");
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  const Source& s = r.home->pine.sources[0];
  CHECK(s.localNetwork);
  CHECK(s.tokenHeader == "X-Api-Key");
  CHECK(s.topic == "house/states");

  TempHome plain;
  r = loadSource(plain, "    url: https://example.com/feed\n    network: public\n");
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  CHECK_FALSE(r.home->pine.sources[0].localNetwork);
  CHECK(r.home->pine.sources[0].tokenHeader.empty());
}

TEST_CASE("http source: check names an address on the local network, and a public one that would be refused") {
  auto notesOf = [](TempHome& h, const std::string& fields) {
    auto r = loadSource(h, fields);
    REQUIRE_MESSAGE(r.ok(), dump(r.errors));
    return securityNotes(*r.home, gatherHomeFacts(*r.home, "linux", ""));
  };
  auto has = [](const std::vector<SecurityNote>& notes, const std::string& key, const std::string& text) {
    for (auto& n : notes)
      if (n.keyPath == key && n.message.find(text) != std::string::npos) return true;
    return false;
  };
  TempHome local;
  auto notes = notesOf(local, "    url: http://192.168.1.20:8123/api\n    network: local\n");
  CHECK(has(notes, "sources[0].network", "may reach your local network"));
  TempHome refused;
  notes = notesOf(refused, "    url: http://localhost:8123/api\n");
  CHECK(has(notes, "sources[0].url", "'localhost' names this machine: every look will be refused"));
  TempHome pub;
  notes = notesOf(pub, "    url: https://example.com/feed\n");
  CHECK_FALSE(has(notes, "sources[0].url", ""));
  CHECK_FALSE(has(notes, "sources[0].network", ""));
}
