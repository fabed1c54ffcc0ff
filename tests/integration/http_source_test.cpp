// http sources through the real process tree: the broker's timer asks pined for one GET,
// pined builds it with the token and a pine-egress process makes it, against a local server
// that checks the conditional requests and records every request's headers.
#include <doctest/doctest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <mutex>

#include "tests/integration/harness.h"
#include "tests/sources/page_server.h"

using namespace pine::test;
using namespace std::chrono_literals;
using pine::sources::test::PageReply;
using pine::sources::test::PageRequest;
using pine::sources::test::PageServer;

// A named namespace: the integration suite is a unity build, and other files have helpers too.
namespace http_source_it {

const std::string kToken = "page-token-3f9a1c7e5b2d48";

std::string dataFilesText(const std::string& dir) {
  std::string all;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) all += readText(e.path().string());
  return all;
}

// Shared with the other source tests (harness.h).
constexpr auto statusOf = &sourceStatus;
constexpr auto eventsOf = &topicEvents;

size_t countPath(const PageServer& s, const std::string& path) {
  size_t n = 0;
  for (auto& r : s.requests()) n += r.path == path;
  return n;
}

constexpr auto setInterval = &setIntervalSec;  // harness.h

}  // namespace http_source_it

using namespace http_source_it;

TEST_CASE("http source: an event on the first look and on a change only; 304 and the same body make none, "
          "also after a broker restart; the token goes to the configured host and nowhere else") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  std::mutex mu;
  std::string body = "hello 1", etag = "\"v1\"", lastModified;
  bool validators = true;
  PageServer server([&](const PageRequest& r) {
    std::lock_guard lock(mu);
    PageReply reply;
    if (r.path == "/start") {  // a redirect on the same host, followed with the token
      reply.status = 302;
      reply.headers = {{"Location", "/page"}};
      return reply;
    }
    if (validators && r.header("If-None-Match") == etag) {
      reply.status = 304;
      return reply;
    }
    reply.headers = {{"Content-Type", "text/plain"}};
    if (validators) reply.headers.emplace_back("ETag", etag);
    if (!lastModified.empty()) reply.headers.emplace_back("Last-Modified", lastModified);
    reply.body = body;
    return reply;
  });
  Pined pined(home);
  REQUIRE(pined.ctl({"secret", "set", "PAGE_TOKEN"}, kToken + "\n").exitCode == 0);
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nsources:\n  - {name: page, type: http, url: \"http://127.0.0.1:" << server.port()
      << "/start\", network: local, tokenSecret: PAGE_TOKEN, start: always, intervalSec: 60}\n";
  auto r = pined.ctl({"reload"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);

  REQUIRE_MESSAGE(waitUntil([&] { return eventsOf(pined, "http/page").size() == 1; }, 30s),
                  tailOf(pined.stderrText(), 3000));
  auto e = eventsOf(pined, "http/page")[0];
  CHECK(e["trust"] == "untrusted");
  CHECK(e["source"] == "page");
  CHECK(e["payload"]["body"] == "hello 1");
  CHECK(e["payload"]["status"] == 200);
  CHECK(e["payload"]["url"] == "http://127.0.0.1:" + std::to_string(server.port()) + "/page");
  CHECK(e["payload"]["truncated"] == false);
  auto requests = server.requests();
  REQUIRE(requests.size() >= 2);
  CHECK(requests[0].path == "/start");
  CHECK(requests[0].header("Authorization") == "Bearer " + kToken);
  CHECK(requests[1].path == "/page");
  CHECK(requests[1].header("Authorization") == "Bearer " + kToken);
  CHECK(requests[1].header("If-None-Match").empty());  // nothing remembered yet
  REQUIRE(waitUntil([&] { return statusOf(home, "page").events == 1; }, 10s));

  // kill -9 of the broker: the new one looks at once, sends the remembered ETag, hears 304.
  pid_t broker = pined.rolePid("broker");
  REQUIRE(kill(broker, SIGKILL) == 0);
  size_t before = countPath(server, "/page");
  REQUIRE_MESSAGE(waitUntil([&] { return countPath(server, "/page") > before; }, 30s), tailOf(pined.stderrText(), 3000));
  CHECK(server.requests().back().header("If-None-Match") == "\"v1\"");
  REQUIRE(waitUntil([&] { return statusOf(home, "page").found == "unchanged"; }, 10s));
  CHECK(eventsOf(pined, "http/page").size() == 1);

  // Changed content: one event. (A changed intervalSec restarts the poller, which looks at once.)
  {
    std::lock_guard lock(mu);
    body = "hello 2";
    etag = "\"v2\"";
    lastModified = "Wed, 02 Dec 2026 10:00:00 GMT";
  }
  setInterval(home, 60, 61);
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  REQUIRE_MESSAGE(waitUntil([&] { return eventsOf(pined, "http/page").size() == 2; }, 30s),
                  tailOf(pined.stderrText(), 3000));
  CHECK(eventsOf(pined, "http/page")[1]["payload"]["body"] == "hello 2");

  // The same body without validators: no event (its SHA-256 is remembered); Last-Modified went back.
  {
    std::lock_guard lock(mu);
    validators = false;
  }
  before = countPath(server, "/page");
  long long lookedBefore = statusOf(home, "page").looked;
  setInterval(home, 61, 62);
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  REQUIRE(waitUntil([&] { return countPath(server, "/page") > before; }, 30s));
  CHECK(server.requests().back().header("If-Modified-Since") == "Wed, 02 Dec 2026 10:00:00 GMT");
  CHECK(server.requests().back().header("If-None-Match") == "\"v2\"");
  REQUIRE(waitUntil([&] { return statusOf(home, "page").looked > lookedBefore; }, 10s));
  CHECK(statusOf(home, "page").found == "unchanged");
  CHECK(eventsOf(pined, "http/page").size() == 2);
  // Counted once per event, by the broker's router, which saves its counts every 5 s.
  CHECK(waitUntil([&] { return statusOf(home, "page").events == 2; }, 15s));

  // The token is in no event, log, audit line or the database.
  std::string events = eventsOf(pined, "http/page").dump();
  CHECK_FALSE(contains(events, kToken));
  pined.stop();
  CHECK_FALSE(contains(dataFilesText(home + "/data"), kToken));
  CHECK_FALSE(contains(pined.stderrText(), kToken));
}

TEST_CASE("http source: a redirect to another host is not followed and the token never reaches it") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  PageServer other([](const PageRequest&) { return PageReply{200, {}, "stolen"}; });
  PageServer server([&](const PageRequest& r) {
    PageReply reply;
    if (r.path == "/away") {
      reply.status = 302;  // localhost and another port: another host
      reply.headers = {{"Location", "http://localhost:" + std::to_string(other.port()) + "/steal"}};
    } else {
      reply.body = "home";
    }
    return reply;
  });
  Pined pined(home);
  REQUIRE(pined.ctl({"secret", "set", "PAGE_TOKEN"}, kToken + "\n").exitCode == 0);
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nsources:\n  - {name: away, type: http, url: \"http://127.0.0.1:" << server.port()
      << "/away\", network: local, tokenSecret: PAGE_TOKEN, start: always}\n"
      << "  - {name: home, type: http, url: \"http://127.0.0.1:" << server.port()
      << "/home\", network: local, tokenSecret: PAGE_TOKEN, start: always}\n";
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  REQUIRE_MESSAGE(waitUntil([&] { return statusOf(home, "away").errors >= 1; }, 30s), tailOf(pined.stderrText(), 3000));
  CHECK(contains(statusOf(home, "away").error, "another host"));
  // The legitimate twin on the same server makes its event.
  REQUIRE(waitUntil([&] { return eventsOf(pined, "http/home").size() == 1; }, 30s));
  CHECK(eventsOf(pined, "http/away").empty());
  CHECK(other.requests().empty());
  for (auto& req : server.requests()) CHECK(req.header("Authorization") == "Bearer " + kToken);
}

TEST_CASE("http source: an address confirmed as public is refused when its name resolves to this machine; "
          "confirmed as local it is fetched") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  PageServer server([](const PageRequest& r) { return PageReply{200, {}, "page at " + r.path}; });
  Pined pined(home);
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nsources:\n  - {name: pub, type: http, url: \"http://localhost:" << server.port()
      << "/pub\", start: always}\n"
      << "  - {name: loc, type: http, url: \"http://localhost:" << server.port()
      << "/loc\", network: local, start: always}\n";
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  REQUIRE_MESSAGE(waitUntil([&] { return eventsOf(pined, "http/loc").size() == 1; }, 30s),
                  tailOf(pined.stderrText(), 3000));
  CHECK(eventsOf(pined, "http/loc")[0]["payload"]["body"] == "page at /loc");
  REQUIRE(waitUntil([&] { return statusOf(home, "pub").errors >= 1; }, 30s));
  CHECK_MESSAGE(contains(statusOf(home, "pub").error, "loopback"), statusOf(home, "pub").error);
  CHECK(eventsOf(pined, "http/pub").empty());
  CHECK(countPath(server, "/pub") == 0);
}

TEST_CASE("http source: an interval under a minute is refused by reload and check with the line") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nsources:\n  - name: fast\n    type: http\n    url: https://example.com/\n    intervalSec: 5\n";
  auto r = pined.ctl({"reload"});
  CHECK(r.exitCode == 2);
  auto c = run({binDir() + "/pinectl", "--home", home, "check"});
  CHECK(c.exitCode == 2);
  CHECK_MESSAGE(contains(c.out + c.err, "pine.yaml:10:"), (c.out + c.err));
  CHECK(contains(c.out + c.err, "intervalSec"));
}
