// Plain single events on pine.sock, served without kj-http (broker/plain_events.cpp): the reader
// says yes only to the plainest POST /v1/events, and pine.sock answers every request the same,
// byte for byte, whether that path is on or off; whatever it does not serve goes to kj-http with
// the bytes it read, so refusals, timeouts and other routes are as before.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "broker/plain_event_request.h"
#include "tests/api/harness.h"

using namespace pine;
using namespace pine::apitest;
using namespace std::chrono_literals;

namespace {

const std::string kToken = FakeBackend().tok;

std::string plainHead(size_t length, const std::string& token = kToken, const std::string& extra = "") {
  return "POST /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + token +
         "\r\nContent-Type: application/json\r\n" + extra + "Content-Length: " + std::to_string(length) + "\r\n\r\n";
}
std::string plainEvent(const std::string& body, const std::string& token = kToken, const std::string& extra = "") {
  return plainHead(body.size(), token, extra) + body;
}
const std::string kDoor = R"({"topic":"home/door","payload":{"open":true}})";

PlainVerdict verdictOf(const std::string& bytes, PlainEventRequest* out = nullptr) {
  PlainEventRequest ignored;
  return readPlainEventRequest(bytes, HttpHeadLimits{}, 1 << 20, out ? out : &ignored);
}

// Everything pine.sock (or the TCP listener) answers to `bytes` sent at once and then the end of
// the client's requests, until it closes, with the plain path on or off; and the backend's calls.
// Over TCP, "Host: localhost" becomes the listener's own 127.0.0.1:PORT.
struct Exchange {
  std::string answers;
  std::vector<std::string> calls;
  unsigned long long plain = 0;  // of them served by the plain path
};
Exchange talk(const std::string& bytes, bool plain, bool tcp = false) {
  auto limits = ApiServer::testLimits();
  limits.plainEvents = plain;
  ApiServer s(limits);
  auto c = tcp ? RawConn::tcp(s.port()) : RawConn::unixSocket(s.socketPath());
  static const std::regex localhost("\r\nhost: localhost\r\n", std::regex::icase);
  c.send(tcp ? std::regex_replace(bytes, localhost, "\r\nHost: 127.0.0.1:" + std::to_string(s.port()) + "\r\n") : bytes);
  c.shutdownWrite();
  CHECK(c.closedWithin(3000ms));
  std::string answers = c.received();
  if (tcp) answers = std::regex_replace(answers, std::regex(std::to_string(s.port())), "PORT");  // said in errors
  return {answers, s.calls(), s.plainEventsServed()};
}

// Answered senders count as coming back for a minute, and idle connections stay open as long.
ControlApiLimits waitingLimits() {
  auto limits = ApiServer::testLimits();
  limits.senderReturn = 60 * kj::SECONDS;
  limits.headerTimeout = 60 * kj::SECONDS;
  return limits;
}

int statusOf(const std::string& answers, size_t i = 0) {
  size_t at = 0;
  for (size_t k = 0; k <= i; ++k) {
    at = answers.find("HTTP/1.1 ", k == 0 ? 0 : at + 1);
    if (at == std::string::npos) return 0;
  }
  return std::stoi(answers.substr(at + 9, 3));
}

}  // namespace

TEST_CASE("the plain reader takes the plainest POST /v1/events, whole, and nothing else") {
  PlainEventRequest r;
  std::string whole = plainEvent(kDoor);
  REQUIRE(verdictOf(whole, &r) == PlainVerdict::Plain);
  CHECK(r.length == whole.size());
  CHECK(r.body == kDoor);
  CHECK(r.authorization == "Bearer " + kToken);
  CHECK(r.host == "localhost");
  // Field names in any case, spaces before values, the fields a client adds: still plain.
  const std::string lower = "POST /v1/events HTTP/1.1\r\nhost:localhost\r\nauthorization: \t Bearer x\r\n"
                            "user-agent: curl/8\r\naccept: */*\r\nconnection: Keep-Alive\r\ncontent-length: 2\r\n\r\n{}";
  CHECK(verdictOf(lower, &r) == PlainVerdict::Plain);
  CHECK(r.authorization == "Bearer x");  // a view into `lower`, which outlives it
  // Followed by the next request: only the first is taken.
  CHECK(verdictOf(whole + whole, &r) == PlainVerdict::Plain);
  CHECK(r.length == whole.size());
  // Any prefix of it may still become one.
  for (size_t n : {size_t(0), size_t(5), size_t(26), size_t(40), whole.size() - kDoor.size() - 2, whole.size() - 1})
    CHECK(verdictOf(whole.substr(0, n)) == PlainVerdict::Incomplete);

  // Everything else is kj-http's, plain-looking or not.
  auto other = [&](const std::string& bytes) { return verdictOf(bytes) == PlainVerdict::Other; };
  std::string body = "{}";
  std::string rest = "Host: localhost\r\nContent-Length: 2\r\n\r\n{}";
  CHECK(other("post /v1/events HTTP/1.1\r\n" + rest));
  CHECK(other("POST /v1/events/ HTTP/1.1\r\n" + rest));
  CHECK(other("POST /v1/events?x=1 HTTP/1.1\r\n" + rest));
  CHECK(other("POST /v1//events HTTP/1.1\r\n" + rest));
  CHECK(other("POST /v1/events HTTP/1.0\r\n" + rest));
  CHECK(other("GET /v1/events HTTP/1.1\r\n" + rest));
  CHECK(other("POST /hooks/gh HTTP/1.1\r\n" + rest));
  CHECK(other("POST  /v1/events HTTP/1.1\r\n" + rest));
  CHECK(other(plainEvent(body, kToken, "Origin: http://evil.example\r\n")));
  CHECK(other(plainEvent(body, kToken, "Sec-Fetch-Site: cross-site\r\n")));
  CHECK(other(plainEvent(body, kToken, "Transfer-Encoding: chunked\r\n")));
  CHECK(other(plainEvent(body, kToken, "Expect: 100-continue\r\n")));
  CHECK(other(plainEvent(body, kToken, "X-Anything: 1\r\n")));
  CHECK(other(plainEvent(body, kToken, "Connection: close\r\n")));
  CHECK(other(plainEvent(body, kToken, "Connection: keep-alive, close\r\n")));
  CHECK(other(plainEvent(body, kToken, "Authorization: Bearer other\r\n")));  // twice
  CHECK(other(plainEvent(body, kToken, "Host: localhost\r\n")));
  CHECK(other(plainEvent(body, kToken, "Content-Type: application/json\r\n")));
  CHECK(other(plainEvent(body, kToken, "Content-Length: 2\r\n")));
  CHECK(other(plainEvent(body, kToken, "User-Agent: a\r\nUser-Agent: b\r\n")));
  CHECK(other(plainEvent(body, kToken, "Host : localhost\r\n")));  // a space before the colon
  CHECK(other(plainEvent(body, kToken, " folded\r\n")));
  CHECK(other(plainEvent(body, kToken, "User-Agent: caf\xc3\xa9\r\n")));  // not ASCII
  CHECK(other(plainEvent(body, kToken, std::string("User-Agent: a\0b\r\n", 17))));
  CHECK(other(plainEvent(body, kToken, "User-Agent: a\rb\r\n")));  // a bare CR
  CHECK(other("POST /v1/events HTTP/1.1\r\nContent-Length: 2 \r\n\r\n{}"));  // spaces after a value
  CHECK(other(plainEvent(body, kToken + "\t")));
  CHECK(other("POST /v1/events HTTP/1.1\nHost: localhost\nContent-Length: 2\n\n{}"));  // bare LF line ends
  for (std::string length : {"", " ", "+2", "-2", "0x2", "2 2", "0", "00", "1048577", "99999999999999999999"})
    CHECK(other("POST /v1/events HTTP/1.1\r\nContent-Length: " + length + "\r\n\r\n{}"));
  CHECK(other("POST /v1/events HTTP/1.1\r\nHost: localhost\r\n\r\n"));  // no length: no body
  // Within the head's limits only.
  HttpHeadLimits small;
  small.maxHeaderLine = 40;
  CHECK(readPlainEventRequest(plainEvent(body, kToken), small, 1 << 20, &r) == PlainVerdict::Other);
  small = HttpHeadLimits{};
  small.maxHeaderLines = 3;
  CHECK(readPlainEventRequest(plainEvent(body, kToken), small, 1 << 20, &r) == PlainVerdict::Other);
  small.maxHeaderLines = 4;
  CHECK(readPlainEventRequest(plainEvent(body, kToken), small, 1 << 20, &r) == PlainVerdict::Plain);
  CHECK(readPlainEventRequest(plainEvent(body, kToken), HttpHeadLimits{}, 1, &r) == PlainVerdict::Other);
}

TEST_CASE("both listeners answer the same, byte for byte, with the plain path on and off") {
  const std::string deep = "{\"topic\":\"t\",\"payload\":" + std::string(80, '[') + std::string(80, ']') + "}";
  struct Case {
    std::string what;
    std::string bytes;
    std::vector<int> statuses;
    unsigned long long plain;  // of those, served by the plain path when it is on
  };
  std::vector<Case> cases = {
      {"one event", plainEvent(kDoor), {200}, 1},
      {"no Content-Type", "POST /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + kToken +
                              "\r\nContent-Length: " + std::to_string(kDoor.size()) + "\r\n\r\n" + kDoor,
       {200}, 1},
      {"no Host", "POST /v1/events HTTP/1.1\r\nAuthorization: Bearer " + kToken + "\r\nContent-Length: " +
                      std::to_string(kDoor.size()) + "\r\n\r\n" + kDoor,
       {403}, 0},
      {"three events in one write", plainEvent(kDoor) + plainEvent(kDoor) + plainEvent(kDoor), {200, 200, 200}, 3},
      {"an event, then another route on the same connection",
       plainEvent(kDoor) + "GET /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + kToken + "\r\n\r\n",
       {200, 200}, 1},
      {"an event after another route", "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n" + plainEvent(kDoor), {200, 200}, 0},
      {"refused by the backend", plainEvent(R"({"payload":1})"), {400}, 1},
      {"the backend failing", plainEvent(R"({"topic":"fail/backend"})") + plainEvent(kDoor), {502, 200}, 2},
      {"a wrong token", plainEvent(kDoor, "tok-wrong"), {401}, 0},
      {"no token", "POST /v1/events HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}", {401}, 0},
      {"the token with spaces after it", plainHead(kDoor.size(), kToken + " \t") + kDoor, {200}, 0},
      {"a length with a space after it", "POST /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " +
                                             kToken + "\r\nContent-Length: 2 \r\n\r\n{}",
       {400}, 0},
      {"a token in two pieces", plainEvent(kDoor, kToken.substr(0, 8) + " " + kToken.substr(8)), {401}, 0},
      {"another Host", "POST /v1/events HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer " + kToken +
                           "\r\nContent-Length: 2\r\n\r\n{}",
       {403}, 0},
      {"a length with leading zeros", "POST /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + kToken +
                                          "\r\nContent-Length: 0" + std::to_string(kDoor.size()) + "\r\n\r\n" + kDoor,
       {200}, 1},
      {"the fields in another order and case", "POST /v1/events HTTP/1.1\r\ncontent-length: " + std::to_string(kDoor.size()) +
                                                   "\r\nACCEPT: */*\r\nauthorization: Bearer " + kToken +
                                                   "\r\nUser-Agent: x\r\nhost: LOCALHOST\r\nConnection: keep-alive\r\n\r\n" + kDoor,
       {200}, 1},
      {"a browser's Origin", plainEvent(kDoor, kToken, "Origin: http://evil.example\r\n"), {403}, 0},
      {"text, not JSON", "POST /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + kToken +
                             "\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}",
       {415}, 0},
      {"a body that is not JSON", plainEvent("{\"topic\":"), {400}, 0},
      {"a body that is a list", plainEvent("[1,2]"), {400}, 0},
      {"a body nested too deep", plainEvent(deep), {400}, 0},
      {"Connection: close", plainEvent(kDoor, kToken, "Connection: close\r\n") + plainEvent(kDoor), {200}, 0},
      {"HTTP/1.0", "POST /v1/events HTTP/1.0\r\nHost: localhost\r\nAuthorization: Bearer " + kToken + "\r\nContent-Length: " +
                       std::to_string(kDoor.size()) + "\r\n\r\n" + kDoor,
       {200}, 0},
      {"Content-Length twice", plainEvent(kDoor, kToken, "Content-Length: " + std::to_string(kDoor.size()) + "\r\n"),
       {400}, 0},
      {"chunked", "POST /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + kToken +
                      "\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
       {400}, 0},  // the fake wants a topic: read whole, then refused by the backend
      {"a space before a colon", plainEvent(kDoor, kToken, "Accept : */*\r\n"), {400}, 0},
      {"a body cut short", plainHead(kDoor.size()) + kDoor.substr(0, 10), {400}, 0},
      // Its first two bytes are the body; the rest is no request line.
      {"a body longer than its length", plainHead(2) + kDoor, {400, 400}, 0},
  };
  for (auto& c : cases) for (bool tcp : {false, true}) {
    INFO(c.what);
    const std::string listener = tcp ? "tcp" : "pine.sock";
    INFO(listener);
    auto on = talk(c.bytes, true, tcp), off = talk(c.bytes, false, tcp);
    CHECK(on.answers == off.answers);
    CHECK(on.calls == off.calls);
    CHECK(on.plain == c.plain);
    CHECK(off.plain == 0);
    for (size_t i = 0; i < c.statuses.size(); ++i) CHECK(statusOf(on.answers, i) == c.statuses[i]);
    CHECK(statusOf(on.answers, c.statuses.size()) == 0);  // and no more
  }
}

TEST_CASE("a plain sender is served many events on one connection and counts as coming back after each") {
  ApiServer s(waitingLimits());
  auto c = RawConn::unixSocket(s.socketPath());
  std::string got;
  for (int i = 0; i < 20; ++i) {
    REQUIRE(c.send(plainEvent(R"({"topic":"home/count","payload":)" + std::to_string(i) + "}")));
    got = c.readUntil("\"seq\":" + std::to_string(i + 1) + ",");
    CHECK(got.find("\"seq\":" + std::to_string(i + 1) + ",") != std::string::npos);
  }
  bool counted = false;
  for (int i = 0; i < 200 && !counted; ++i) {
    counted = s.returningSenders() == 1;
    if (!counted) std::this_thread::sleep_for(10ms);
  }
  CHECK(counted);
  auto calls = s.calls();
  CHECK(std::count_if(calls.begin(), calls.end(), [](auto& c) { return c.rfind("publishEvent", 0) == 0; }) == 20);
  // Its next bytes bring it back, whatever they are.
  REQUIRE(c.send("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  CHECK(c.readUntil("\"ok\"").find("\"ok\"") != std::string::npos);
  CHECK(s.returningSenders() == 0);
}

TEST_CASE("on pine.sock a request arriving in pieces, or none at all, meets kj-http's timeouts") {
  ApiServer s;  // header and body timeouts of 700 ms
  // An event whose body comes 100 ms after its head: served (by kj-http, which has the connection now).
  auto pieces = RawConn::unixSocket(s.socketPath());
  REQUIRE(pieces.send(plainHead(kDoor.size())));
  std::this_thread::sleep_for(100ms);
  REQUIRE(pieces.send(kDoor));
  CHECK(parse(pieces.readResponse()).status == 200);
  REQUIRE(pieces.send(plainEvent(kDoor)));  // and the next on it
  CHECK(parse(pieces.readResponse()).status == 200);
  // A head that never ends: 408 after the header timeout, then closed.
  auto slow = RawConn::unixSocket(s.socketPath());
  REQUIRE(slow.send("POST /v1/events HTTP/1.1\r\nHost: loc"));
  CHECK(slow.closedWithin(3000ms));
  if (!slow.received().empty()) CHECK(parse(slow.received()).status == 408);
  // A connection that sends nothing is closed after the header timeout.
  auto idle = RawConn::unixSocket(s.socketPath());
  auto start = std::chrono::steady_clock::now();
  CHECK(idle.closedWithin(3000ms));
  CHECK(std::chrono::steady_clock::now() - start >= 600ms);
  CHECK(idle.received().empty());
  // And one that was served an event and then says nothing more, likewise.
  auto quiet = RawConn::unixSocket(s.socketPath());
  REQUIRE(quiet.send(plainEvent(kDoor)));
  CHECK(parse(quiet.readResponse()).status == 200);
  CHECK(quiet.closedWithin(3000ms));
  // The wait is counted from the last answer, not from the connection's start: a sender that
  // sends every 400 ms is served for 2 s, past three header timeouts, then closed once it stops.
  auto steady = RawConn::unixSocket(s.socketPath());
  auto began = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    REQUIRE(steady.send(plainEvent(kDoor)));
    CHECK(parse(steady.readResponse()).status == 200);
    std::this_thread::sleep_for(400ms);
  }
  CHECK(std::chrono::steady_clock::now() - began >= 2000ms);
  REQUIRE(steady.send(plainEvent(kDoor)));
  CHECK(parse(steady.readResponse()).status == 200);
  auto stopped = std::chrono::steady_clock::now();
  CHECK(steady.closedWithin(3000ms));
  CHECK(std::chrono::steady_clock::now() - stopped >= 600ms);
  // An event whose commit takes longer than the header timeout is answered: the wait for a next
  // request is not counted while one is being served.
  auto held = RawConn::unixSocket(s.socketPath());
  REQUIRE(held.send(plainEvent(R"({"topic":"hold/backend","payload":1})")));
  auto wakesBefore = s.idleWatchWakes();
  std::this_thread::sleep_for(1500ms);
  // Meanwhile its watch woke once or twice, not over and over at a time already past.
  CHECK(s.idleWatchWakes() - wakesBefore <= 4);
  s.run([](FakeBackend& b) {
    REQUIRE(b.held.size() == 1);
    b.held[0]->fulfill(ApiReply{200, nlohmann::json{{"event", b.addEvent("hold/backend", 1)}}});
  });
  CHECK(parse(held.readResponse()).status == 200);
}

TEST_CASE("over TCP a plain sender, once answered, may be closed to make room like any waiting connection") {
  auto limits = ApiServer::testLimits();
  limits.maxConnections = 3;
  limits.headerTimeout = 60 * kj::SECONDS;  // only making room closes them here
  ApiServer s(limits);
  auto send = [&](RawConn& c, int n) {  // true once this event's answer has come
    REQUIRE(c.send(request(s, "POST", "/v1/events", R"({"topic":"home/n","payload":)" + std::to_string(n) + "}")));
    std::string answered = R"("payload":)" + std::to_string(n) + ",";  // in the answer's event
    return c.readUntil(answered).find(answered) != std::string::npos;
  };
  auto a = RawConn::tcp(s.port()), b = RawConn::tcp(s.port());
  CHECK(send(a, 1));
  std::this_thread::sleep_for(50ms);
  CHECK(send(b, 2));
  CHECK(s.plainEventsServed() == 2);
  std::this_thread::sleep_for(50ms);
  auto idle = RawConn::tcp(s.port());
  std::this_thread::sleep_for(50ms);
  // All three taken: a new request is served, and the sender answered longest ago made room.
  CHECK(call(s, "GET", "/v1/status").status == 200);
  CHECK(a.closedWithin(2000ms));
  CHECK_FALSE(b.closedWithin(200ms));
  CHECK_FALSE(idle.closedWithin(100ms));
  // The others go on as before: b's next event is served the plain way.
  CHECK(send(b, 3));
  CHECK(s.plainEventsServed() == 3);
}

TEST_CASE("a plain sender whose event failed does not count as coming back") {
  ApiServer s(waitingLimits());
  auto c = RawConn::unixSocket(s.socketPath());
  REQUIRE(c.send(plainEvent(R"({"topic":"fail/backend"})")));
  CHECK(c.readUntil("could not answer").find("the store is gone") != std::string::npos);
  std::this_thread::sleep_for(100ms);
  CHECK(s.returningSenders() == 0);
  CHECK(s.plainEventsServed() == 1);
  // Its twin, an event that is stored: it does.
  REQUIRE(c.send(plainEvent(kDoor)));
  CHECK(c.readUntil("home/door").find("home/door") != std::string::npos);
  bool counted = false;
  for (int i = 0; i < 100 && !counted; ++i) {
    counted = s.returningSenders() == 1;
    if (!counted) std::this_thread::sleep_for(10ms);
  }
  CHECK(counted);
}
