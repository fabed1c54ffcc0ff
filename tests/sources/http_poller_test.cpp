// broker/sources/http_poller.h and page_change.h on a KJ event loop, with pined's pollSource
// played by a table of answers: an event on the first look and on a change only, none for a
// 304 or the same body, memory that outlives the poller (a broker restart), redirects on the
// same host followed and to another host never asked for, errors logged once per change.
#include <doctest/doctest.h>

#include "tests/sources/log_capture.h"
#include <kj/async-io.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "broker/sources/http_poller.h"

using namespace pine::sources;

namespace {

// pined and the store as the poller sees them: answers by address, memory and status in maps.
struct FakeBroker {
  std::function<PageAnswer(const std::string& url, const std::string& etag, const std::string& lastModified)> answer;
  std::vector<std::string> asked;  // the addresses fetched ("" is the configured one)
  std::vector<Draft> events;
  std::map<std::string, std::map<std::string, std::string>> memory;
  std::vector<std::string> errors, found;

  HttpServices services() {
    HttpServices s;
    s.fetch = [this](const std::string&, const std::string& url, const std::string& etag, const std::string& lm) {
      asked.push_back(url);
      return kj::Promise<PageAnswer>(answer(url, etag, lm));
    };
    s.publish = [this](Draft d) {
      events.push_back(std::move(d));
      return kj::Promise<void>(kj::READY_NOW);
    };
    s.recall = [this](const std::string& source) { return memory[source]; };
    s.remember = [this](const std::string& source, const std::map<std::string, std::string>& rows) {
      for (auto& [k, v] : rows) memory[source][k] = v;
    };
    s.looked = [this](const std::string&, const std::string& f, long long) { found.push_back(f); };
    s.failed = [this](const std::string&, const std::string& e) { errors.push_back(e); };
    return s;
  }
};

PageAnswer page(int status, std::string body, std::vector<std::pair<std::string, std::string>> headers = {}) {
  PageAnswer a;
  a.status = status;
  a.body = std::move(body);
  a.headers = std::move(headers);
  return a;
}

pine::config::Source source(const std::string& url) {
  pine::config::Source s;
  s.name = "page";
  s.type = "http";
  s.url = url;
  s.intervalSec = 1;  // below the configuration's floor of 60, only here: the test would wait minutes
  return s;
}

struct Loop {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  // Runs the loop until `cond` holds (at most `ms`).
  bool until(const std::function<bool()>& cond, int ms = 5000) {
    for (int waited = 0; !cond() && waited < ms; waited += 10)
      io.provider->getTimer().afterDelay(10 * kj::MILLISECONDS).wait(io.waitScope);
    return cond();
  }
};

using pine::test::LogCapture;

}  // namespace

TEST_CASE("http poller: an event on the first look and on a change, none for a 304 or the same body") {
  Loop loop;
  FakeBroker b;
  std::string body = "hello 1", etag = "\"v1\"";
  bool validators = true;
  std::vector<std::string> etagsSent;
  b.answer = [&](const std::string&, const std::string& sentEtag, const std::string&) {
    etagsSent.push_back(sentEtag);
    if (validators && sentEtag == etag) return page(304, "");
    return page(200, body, validators ? std::vector<std::pair<std::string, std::string>>{{"ETag", etag}, {"Content-Type", "text/plain"}}
                                      : std::vector<std::pair<std::string, std::string>>{{"Content-Type", "text/plain"}});
  };
  auto services = b.services();
  {
    HttpPoller poller(loop.io.provider->getTimer(), source("https://example.com/p"), services, 10 * kj::MILLISECONDS);
    REQUIRE(loop.until([&] { return b.found.size() >= 2; }));
    REQUIRE(b.events.size() == 1);
    CHECK(b.events[0].topic == "http/page");
    CHECK(b.events[0].trust == "untrusted");
    auto j = nlohmann::json::parse(b.events[0].payload);
    CHECK(j["body"] == "hello 1");
    CHECK(j["status"] == 200);
    CHECK(j["contentType"] == "text/plain");
    CHECK(j["truncated"] == false);
    CHECK(j["sha256"].get<std::string>().size() == 64);
    CHECK(b.found[0] == "changed");
    CHECK(b.found[1] == "unchanged");  // the 304
    CHECK(etagsSent[0].empty());
    CHECK(etagsSent[1] == "\"v1\"");

    // The same body without validators: no event either (its SHA-256 is remembered).
    validators = false;
    size_t looks = b.found.size();
    REQUIRE(loop.until([&] { return b.found.size() >= looks + 1; }));
    CHECK(b.events.size() == 1);
    // A change: one event.
    body = "hello 2";
    REQUIRE(loop.until([&] { return b.events.size() == 2; }));
    CHECK(nlohmann::json::parse(b.events[1].payload)["body"] == "hello 2");
  }
  // A new poller (the broker restarted) with the same memory: unchanged content makes no event.
  size_t looks = b.found.size();
  HttpPoller again(loop.io.provider->getTimer(), source("https://example.com/p"), services, 10 * kj::MILLISECONDS);
  REQUIRE(loop.until([&] { return b.found.size() >= looks + 1; }));
  CHECK(b.events.size() == 2);
  // Another configured address forgets what was seen at the old one.
  b.memory["page"]["url"] = "https://example.com/old";
  looks = b.found.size();
  REQUIRE(loop.until([&] { return b.found.size() >= looks + 1; }));
  CHECK(b.events.size() == 3);
}

TEST_CASE("http poller: a body over 256 KiB is cut in the event and says so; an owner source's events are the owner's") {
  Loop loop;
  FakeBroker b;
  std::string big(300 << 10, 'x');
  b.answer = [&](const std::string&, const std::string&, const std::string&) { return page(200, big); };
  auto s = source("https://example.com/p");
  s.trust = pine::config::Trust::Owner;
  s.topic = "feeds/news";
  auto services = b.services();
  HttpPoller poller(loop.io.provider->getTimer(), s, services, 10 * kj::MILLISECONDS);
  REQUIRE(loop.until([&] { return !b.events.empty(); }));
  auto j = nlohmann::json::parse(b.events[0].payload);
  CHECK(j["truncated"] == true);
  CHECK(j["bytes"] == big.size());
  CHECK(j["body"].get<std::string>().size() == kPageEventBytes);
  CHECK(b.events[0].trust == "owner");
  CHECK(b.events[0].topic == "feeds/news");
}

TEST_CASE("http poller: redirects on the same host are followed; to another host never asked for, logged once") {
  Loop loop;
  LogCapture log;
  FakeBroker b;
  b.answer = [&](const std::string& url, const std::string&, const std::string&) {
    if (url.empty()) return page(302, "", {{"Location", "/moved"}});
    if (url == "http://127.0.0.1:8080/moved") return page(301, "", {{"location", "http://127.0.0.1:8080/final"}});
    if (url == "http://127.0.0.1:8080/final") return page(200, "here");
    return page(500, "asked for " + url);
  };
  auto services = b.services();
  {
    HttpPoller poller(loop.io.provider->getTimer(), source("http://127.0.0.1:8080/start"), services, 10 * kj::MILLISECONDS);
    REQUIRE(loop.until([&] { return !b.events.empty(); }));
    CHECK(b.asked == std::vector<std::string>{"", "http://127.0.0.1:8080/moved", "http://127.0.0.1:8080/final"});
    CHECK(nlohmann::json::parse(b.events[0].payload)["url"] == "http://127.0.0.1:8080/final");
    CHECK(b.errors.empty());
  }
  b.asked.clear();
  b.answer = [&](const std::string& url, const std::string&, const std::string&) {
    if (url.empty()) return page(302, "", {{"Location", "http://localhost:8080/steal"}});
    return page(200, "asked for " + url);
  };
  HttpPoller away(loop.io.provider->getTimer(), source("http://127.0.0.1:8080/start"), services, 10 * kj::MILLISECONDS);
  REQUIRE(loop.until([&] { return b.errors.size() >= 3; }));
  for (auto& url : b.asked) CHECK(url.empty());  // only ever the configured address
  CHECK(b.errors[0].find("another host") != std::string::npos);
  CHECK(log.occurrences("another host") == 1);  // counted every time, logged once
  CHECK(b.events.size() == 1);
}

TEST_CASE("http poller: more than 5 redirects end the look with an error") {
  Loop loop;
  FakeBroker b;
  int n = 0;
  b.answer = [&](const std::string&, const std::string&, const std::string&) {
    return page(307, "", {{"Location", "/r" + std::to_string(++n)}});
  };
  auto services = b.services();
  HttpPoller poller(loop.io.provider->getTimer(), source("https://example.com/p"), services, 10 * kj::MILLISECONDS);
  REQUIRE(loop.until([&] { return !b.errors.empty(); }));
  CHECK(b.asked.size() == 1 + kMaxRedirects);
  CHECK(b.errors[0].find("more than 5 redirects") != std::string::npos);
  CHECK(b.events.empty());
}

TEST_CASE("http poller: an error answer, a 404 and pined's refusal are errors, not events") {
  Loop loop;
  FakeBroker b;
  int n = 0;
  b.answer = [&](const std::string&, const std::string&, const std::string&) {
    PageAnswer a;
    if (++n == 1) a.error = "GET http://localhost/: 127.0.0.1 is a loopback address";
    else a = page(404, "not here");
    return a;
  };
  auto services = b.services();
  HttpPoller poller(loop.io.provider->getTimer(), source("http://localhost/"), services, 10 * kj::MILLISECONDS);
  REQUIRE(loop.until([&] { return b.errors.size() >= 2; }));
  CHECK(b.errors[0].find("loopback") != std::string::npos);
  CHECK(b.errors[1].find("HTTP 404") != std::string::npos);
  CHECK(b.events.empty());
}

TEST_CASE("http poller: an ETag or Last-Modified that could not be sent back is not kept") {
  // pined refuses a look whose validators hold a placeholder, a control character or more than
  // 1 KiB: kept, such a value (the server's choice) stopped the source for good.
  PageMemory before;
  for (std::string bad : {std::string("\"${secret:TOK}\""), std::string("\"a\nb\""), std::string(1025, 'x')}) {
    auto look = judgePage(before, "https://example.com/p", page(200, "body", {{"ETag", bad}, {"Last-Modified", bad}}));
    CHECK(look.verdict == PageVerdict::Changed);  // the change is still an event
    CHECK(look.memory.etag.empty());
    CHECK(look.memory.lastModified.empty());
    CHECK(look.memory.sha256.size() == 64);  // and the body's hash still tells the next change
  }
  // The twin: values that can go back are kept.
  auto look = judgePage(before, "https://example.com/p",
                        page(200, "body", {{"ETag", "\"v1\""}, {"Last-Modified", "Wed, 02 Dec 2026 10:00:00 GMT"}}));
  CHECK(look.memory.etag == "\"v1\"");
  CHECK(look.memory.lastModified == "Wed, 02 Dec 2026 10:00:00 GMT");
}

TEST_CASE("http poller: a 304 to a look that sent nothing to compare with is an error, not \"unchanged\"") {
  // A review's server answered 304 to every request: the source showed "unchanged, 0 errors"
  // for ever while nothing had ever been delivered.
  PageMemory none;
  auto look = judgePage(none, "https://example.com/p", page(304, ""));
  CHECK(look.error.find("HTTP 304") != std::string::npos);
  CHECK(look.error.find("sent no ETag or date") != std::string::npos);
  // The twins: a 304 after an ETag, or after a date, was sent is the page unchanged.
  PageMemory tagged;
  tagged.etag = "\"v1\"";
  CHECK(judgePage(tagged, "https://example.com/p", page(304, "")).verdict == PageVerdict::Unchanged);
  PageMemory dated;
  dated.lastModified = "Wed, 02 Dec 2026 10:00:00 GMT";
  auto ok = judgePage(dated, "https://example.com/p", page(304, ""));
  CHECK(ok.verdict == PageVerdict::Unchanged);
  CHECK(ok.error.empty());
}
