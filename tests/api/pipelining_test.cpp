// Requests sent ahead of their answers, over real sockets: a client may pipeline as many as it
// likes and gets every answer, in order; past HttpHeadLimits::maxAhead requests (or maxAheadBytes)
// the broker stops reading (TCP holds the client back) rather than cutting the connection; and
// when a request is refused and the connection ends, the answers already sent still reach a
// client that reads them late (the socket is not reset: the broker reads on until the client
// closes, for a while).
#include <doctest/doctest.h>

#include <string>
#include <thread>

#include "broker/api_auth.h"
#include "harness.h"

using namespace pine::apitest;
using namespace std::chrono_literals;

namespace {

size_t count(const std::string& all, const std::string& what) {
  size_t n = 0;
  for (size_t at = all.find(what); at != std::string::npos; at = all.find(what, at + what.size())) n++;
  return n;
}

size_t publishes(ApiServer& s) {
  size_t n = 0;
  for (auto& c : s.calls()) n += c.rfind("publishEvent", 0) == 0;
  return n;
}

// Reads until `answers` answers in all have arrived, the connection ends, or 20 s have passed.
std::string readAnswers(RawConn& c, size_t answers) {
  const std::string mark = "HTTP/1.1 ";
  auto deadline = std::chrono::steady_clock::now() + 20s;
  size_t seen = 0, at = 0;  // counted as they arrive, not from the start each time
  for (;;) {
    const std::string& got = c.received();
    for (size_t p = got.find(mark, at); p != std::string::npos; p = got.find(mark, at)) {
      seen++;
      at = p + mark.size();
    }
    if (seen >= answers || std::chrono::steady_clock::now() >= deadline || c.closedWithin(5ms)) break;
  }
  return c.received();
}

// Sends `bytes` from a thread of its own while the caller reads nothing for `quiet`, then
// reads until `answers` answers have arrived, the connection ends, or 20 s have passed.
std::string sendAheadThenRead(RawConn& c, const std::string& bytes, std::chrono::milliseconds quiet, size_t answers) {
  std::thread sender([&c, &bytes]() { c.send(bytes); });
  std::this_thread::sleep_for(quiet);
  readAnswers(c, answers);
  if (count(c.received(), "HTTP/1.1 ") < answers) c.shutdownWrite();  // a sender still blocked: let it go
  sender.join();
  return c.received();
}

}  // namespace

TEST_CASE("framing: past maxAhead requests not yet taken, the next one waits (not refused) until one is taken") {
  const std::string get = "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n";
  const size_t max = pine::HttpHeadLimits{}.maxAhead;
  REQUIRE(max == 4096);  // as docs/api.md says
  std::string all;
  for (size_t i = 0; i < max + 3; ++i) all += get;
  pine::RequestFraming f;
  size_t n = f.scan(all.data(), all.size());
  CHECK(n == max * get.size());
  CHECK(f.full());
  CHECK_FALSE(f.refusal().has_value());
  CHECK_FALSE(f.closed());
  CHECK(f.scan(all.data() + n, all.size() - n) == 0);  // still full: nothing more goes on
  f.takeHttp10();
  CHECK_FALSE(f.full());
  CHECK(f.scan(all.data() + n, all.size() - n) == get.size());  // room for exactly one
  CHECK(f.full());
  // A request already begun is passed whole, whatever the count: the wait is only between requests.
  pine::RequestFraming g;
  std::string upTo = all.substr(0, max * get.size());
  std::string body = R"({"topic":"t"})";
  std::string post = "POST /v1/events HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  g.takeHttp10();  // nothing to take: no effect
  CHECK(g.scan(upTo.data(), upTo.size() - get.size()) == upTo.size() - get.size());
  std::string last = get + post;
  CHECK(g.scan(last.data(), last.size()) == get.size());  // the 4096th passes, the next waits
  g.takeHttp10();
  CHECK(g.scan(post.data(), post.size()) == post.size());
  // Large heads fill it by their bytes first: requests are passed while the bytes from the first
  // one not taken stay under maxAheadBytes (1 MiB), and the one that starts past it waits.
  const std::string big = "GET /health HTTP/1.1\r\nHost: localhost\r\nX-Pad: " + std::string(8000, 'p') + "\r\n\r\n";
  std::string bigs;
  REQUIRE(pine::HttpHeadLimits{}.maxAheadBytes == (1u << 20));
  const size_t fit = (pine::HttpHeadLimits{}.maxAheadBytes + big.size() - 1) / big.size();
  for (size_t i = 0; i < fit + 5; ++i) bigs += big;
  pine::RequestFraming b;
  size_t m = b.scan(bigs.data(), bigs.size());
  CHECK(m == fit * big.size());
  CHECK(b.full());
  CHECK_FALSE(b.refusal().has_value());
  b.takeHttp10();
  CHECK(b.scan(bigs.data() + m, bigs.size() - m) == big.size());  // the oldest taken: one more fits
  // The legitimate twin: requests taken as they come never fill it.
  pine::RequestFraming h;
  for (size_t i = 0; i < 2 * max; ++i) {
    REQUIRE(h.scan(get.data(), get.size()) == get.size());
    h.takeHttp10();
  }
  CHECK_FALSE(h.full());
}

// Events after a first request that is not one, so that kj-http serves them all (not plain_events.cpp).
std::string getThenEvents(const ApiServer& s, size_t n) {
  std::string all = request(s, "GET", "/health");
  const std::string one = request(s, "POST", "/v1/events", R"({"topic":"ahead"})");
  for (size_t i = 1; i < n; ++i) all += one;
  return all;
}

TEST_CASE("thousands of requests pipelined on one connection while the client reads nothing are each answered") {
  ApiServer s;
  const size_t n = 12000;
  auto c = RawConn::tcp(s.port());
  // The broker reads ahead while its answers pile up unread, then the client reads. Its reads then
  // empty full receive windows, which is where ReadyReads once waited for bytes that had already
  // come (kj-http's header timeout, 700 ms here, then ended the connection after 1,321 answers).
  std::string got = sendAheadThenRead(c, getThenEvents(s, n), 500ms, n);
  CHECK(count(got, "HTTP/1.1 200") == n);
  CHECK(count(got, "HTTP/1.1 4") == 0);
  CHECK(publishes(s) == n - 1);
}

TEST_CASE("past maxAhead requests ahead of their answers the broker stops reading, and serves every one") {
  // Small limits, so that each read of kj-http (4 KiB and up) goes past them.
  for (auto limit : {std::pair<size_t, uint64_t>{16, 1u << 20}, {4096, 2048}}) {
    const size_t ahead = limit.first;
    const uint64_t bytes = limit.second;
    CAPTURE(ahead);
    CAPTURE(bytes);
    auto limits = ApiServer::testLimits();
    limits.head.maxAhead = ahead;
    limits.head.maxAheadBytes = bytes;
    ApiServer s(limits);
    const size_t n = 3000;
    auto c = RawConn::tcp(s.port());
    std::string got = sendAheadThenRead(c, getThenEvents(s, n), 300ms, n);
    CHECK(count(got, "HTTP/1.1 200") == n);
    CHECK(count(got, "HTTP/1.1 4") == 0);  // nothing refused for it
    CHECK(publishes(s) == n - 1);
    CHECK(s.heldReads() > 0);  // the limit was reached: some of what was read waited
  }
  // The legitimate twin: at the default limits, a client that reads each answer before it sends
  // the next request never has a read held.
  ApiServer s;
  auto c = RawConn::tcp(s.port());
  const std::string get = request(s, "GET", "/health");
  for (int i = 0; i < 50; ++i) {
    REQUIRE(c.send(get));
    REQUIRE(count(readAnswers(c, i + 1), "HTTP/1.1 200") == size_t(i + 1));
  }
  CHECK(s.heldReads() == 0);
}

TEST_CASE("a refused head after pipelined events: every earlier answer, then the refusal, reach a client that reads late") {
  ApiServer s;
  // A first request that is not an event: kj-http serves every request, answers, then refuses.
  std::string one = request(s, "POST", "/v1/events", R"({"topic":"ahead","payload":1})");
  const size_t n = 3000;
  std::string before = request(s, "GET", "/health"), after;
  for (size_t i = 1; i < n; ++i) before += one;
  for (size_t i = 0; i < n; ++i) after += one;
  // A space before a header's colon: refused (400) by the framing, and the connection ends there.
  std::string bad = "GET /health HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port()) + "\r\nBad Header: x\r\n\r\n";
  auto c = RawConn::tcp(s.port());
  std::string got = sendAheadThenRead(c, before + bad + after, 500ms, n + 1);
  CHECK(c.closedWithin(5s));
  CHECK(count(got, "HTTP/1.1 200") == n);
  CHECK(count(got, "HTTP/1.1 400") == 1);
  CHECK(got.find("a header line must be Name: value") != std::string::npos);
  CHECK(publishes(s) == n - 1);  // nothing after the refused head was served
  // The legitimate twin: the same events without the bad head are all served and answered.
  auto d = RawConn::tcp(s.port());
  std::string good = sendAheadThenRead(d, before, 500ms, n);
  CHECK(count(good, "HTTP/1.1 200") == n);
  CHECK(publishes(s) == 2 * (n - 1));
}
