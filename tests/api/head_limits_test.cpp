// The request head's limits and the body's framing, over both listeners, with and without the
// token: a header line, the number of header lines, the whole head and the request target each
// just under their limit (served) and just over (431 or 414, answered before the head ends, then
// the connection is closed); a body that is not JSON (415, the connection stays usable); a chunk
// size that overflows 64 bits (400, and nothing after it on that connection is served).
#include <doctest/doctest.h>

#include <algorithm>

#include "pinectl/http_client.h"
#include "tests/api/harness.h"

using namespace pine::apitest;
using namespace std::chrono_literals;

namespace {

const pine::HttpHeadLimits kLimits;  // the production values: the tests run against them

struct Via {
  bool unix;
  bool token;
  const char* name;
};
const Via kEveryWay[] = {{false, true, "tcp, token"}, {false, false, "tcp, no token"},
                         {true, true, "unix, token"}, {true, false, "unix, no token"}};

RawConn dial(const ApiServer& s, const Via& via) {
  return via.unix ? RawConn::unixSocket(s.socketPath()) : RawConn::tcp(s.port());
}

// The request line and the headers every request carries (Host, and the token when asked), as
// the header lines they are; `extra` lines follow, then the end of the head.
std::vector<std::string> baseLines(const ApiServer& s, const Via& via) {
  std::vector<std::string> lines = {via.unix ? "Host: localhost" : "Host: 127.0.0.1:" + std::to_string(s.port())};
  if (via.token) lines.push_back("Authorization: Bearer " + s.token());
  return lines;
}

std::string head(const std::string& requestLine, const std::vector<std::string>& lines) {
  std::string h = requestLine + "\r\n";
  for (auto& l : lines) h += l + "\r\n";
  return h + "\r\n";
}

// What the server says to a GET of /v1/status sent with these header lines.
Resp getStatus(const ApiServer& s, const Via& via, const std::vector<std::string>& extra, RawConn* keep = nullptr) {
  auto lines = baseLines(s, via);
  lines.insert(lines.end(), extra.begin(), extra.end());
  auto c = dial(s, via);
  c.send(head("GET /v1/status HTTP/1.1", lines));
  auto r = parse(c.readResponse());
  if (keep) *keep = std::move(c);
  return r;
}

int served(const Via& via) { return via.token ? 200 : 401; }  // within the limits: the token decides

bool limitCalled(ApiServer& s, const std::string& prefix) {
  auto calls = s.calls();
  return std::any_of(calls.begin(), calls.end(), [&](const std::string& c) { return c.rfind(prefix, 0) == 0; });
}

std::string line(const std::string& name, size_t length) {  // "name: aaa..." of exactly `length` bytes
  return name + ": " + std::string(length - name.size() - 2, 'a');
}

std::string hex(size_t n) {
  char b[32];
  snprintf(b, sizeof b, "%zx", n);
  return b;
}

}  // namespace

TEST_CASE("a header line over 8 KiB is answered 431 before the head ends, on every listener, token or not") {
  ApiServer s;
  REQUIRE(kLimits.maxHeaderLine == 8192);
  for (auto& via : kEveryWay) {
    INFO(via.name);
    CHECK(getStatus(s, via, {line("X-Pad", 8192)}).status == served(via));  // just under: served
    auto c = dial(s, via);
    // Just over, and the line never ends: the answer cannot have waited for the rest of the head.
    auto lines = baseLines(s, via);
    std::string h = head("GET /v1/status HTTP/1.1", lines);
    c.send(h.substr(0, h.size() - 2) + line("X-Pad", 8193));
    auto r = parse(c.readResponse());
    CHECK(r.status == 431);
    CHECK(r.j["error"].get<std::string>().find("header line longer than 8192 bytes") != std::string::npos);
    CHECK(r.head.find("connection: close") != std::string::npos);
    CHECK(c.closedWithin(2000ms));
  }
  // A line far larger than kj-http's own 128 KiB buffer gets the same answer (kj alone would close silently).
  auto c = RawConn::tcp(s.port());
  c.send("GET /health HTTP/1.1\r\nX-Huge: " + std::string(200 << 10, 'a'));
  CHECK(parse(c.readResponse()).status == 431);
  auto calls = s.calls();
  CHECK(std::count(calls.begin(), calls.end(), "status") == 2);  // only the two served with the token
}

TEST_CASE("more than 100 header lines are answered 431; 100 are served") {
  ApiServer s;
  REQUIRE(kLimits.maxHeaderLines == 100);
  for (auto& via : kEveryWay) {
    INFO(via.name);
    size_t base = baseLines(s, via).size();
    std::vector<std::string> extra;
    for (size_t i = base; i < 100; i++) extra.push_back("X-H" + std::to_string(i) + ": v");
    CHECK(getStatus(s, via, extra).status == served(via));
    extra.push_back("X-One-Too-Many: v");
    RawConn c = RawConn::tcp(s.port());
    auto r = getStatus(s, via, extra, &c);
    CHECK(r.status == 431);
    CHECK(r.j["error"].get<std::string>().find("more than 100 header lines") != std::string::npos);
    CHECK(c.closedWithin(2000ms));
  }
}

TEST_CASE("a head over 32 KiB in all is answered 431 even when each line is short; 32 KiB is served") {
  ApiServer s;
  REQUIRE(kLimits.maxHead == 32768);
  for (auto& via : kEveryWay) {
    INFO(via.name);
    auto lines = baseLines(s, via);
    // Head bytes so far: the request line and the base lines with their CRLFs, and the final CRLF.
    size_t used = std::string("GET /v1/status HTTP/1.1\r\n").size() + 2;
    for (auto& l : lines) used += l.size() + 2;
    std::vector<std::string> extra;
    while (used + 4002 + 100 <= kLimits.maxHead) {
      extra.push_back(line("X-P" + std::to_string(extra.size()), 4000));
      used += 4002;
    }
    extra.push_back(line("X-Last", kLimits.maxHead - used - 2));  // exactly 32768 bytes of head
    CHECK(getStatus(s, via, extra).status == served(via));
    extra.back() += "a";
    RawConn c = RawConn::tcp(s.port());
    auto r = getStatus(s, via, extra, &c);
    CHECK(r.status == 431);
    CHECK(r.j["error"].get<std::string>().find("request head larger than 32768 bytes") != std::string::npos);
    CHECK(c.closedWithin(2000ms));
  }
}

TEST_CASE("a request target over 4 KiB is answered 414 as soon as it is that long; 4 KiB is served") {
  ApiServer s;
  REQUIRE(kLimits.maxTarget == 4096);
  for (auto& via : kEveryWay) {
    INFO(via.name);
    std::string prefix = "/v1/events?topic=";
    std::string target = prefix + std::string(kLimits.maxTarget - prefix.size(), 't');
    auto c = dial(s, via);
    c.send(head("GET " + target + " HTTP/1.1", baseLines(s, via)));
    CHECK(parse(c.readResponse()).status == served(via));
    auto over = dial(s, via);
    over.send("GET " + target + "t");  // the request line is not even finished
    auto r = parse(over.readResponse());
    CHECK(r.status == 414);
    CHECK(r.j["error"].get<std::string>().find("request target longer than 4096 bytes") != std::string::npos);
    CHECK(over.closedWithin(2000ms));
  }
  // The path on its own has a tighter limit (checkPath: 2048 bytes), a 400 after the token check.
  CHECK(call(s, "GET", "/v1/state/" + std::string(2100, 'k')).status == 400);
  auto calls = s.calls();
  CHECK(std::count_if(calls.begin(), calls.end(), [](auto& c) { return c.rfind("listEvents", 0) == 0; }) == 2);
}

TEST_CASE("a request head the parser could read two ways is answered 400, never passed on") {
  ApiServer s;
  std::string host = "Host: 127.0.0.1:" + std::to_string(s.port()), auth = "Authorization: Bearer " + s.token();
  auto answer = [&](const std::string& raw) {
    auto c = RawConn::tcp(s.port());
    c.send(raw);
    auto r = parse(c.readResponse());
    CHECK(c.closedWithin(2000ms));
    return r;
  };
  auto get = [&](const std::vector<std::string>& lines) { return answer(head("GET /v1/status HTTP/1.1", lines)); };
  // A bare CR ends a header line for kj-http but not for us: a Content-Length hidden behind one.
  auto r = get({host, auth, "X-A: a\rContent-Length: 5"});
  CHECK(r.status == 400);
  CHECK(r.j["error"].get<std::string>().find("control byte") != std::string::npos);
  CHECK(get({host, auth, std::string("X-A: a\0b", 8)}).status == 400);  // NUL
  CHECK(get({host, auth, "X-A: a", " folded"}).status == 400);  // obs-fold continuation line
  CHECK(get({host, auth, "Content-Length : 0"}).status == 400);  // space before the colon
  CHECK(get({host, auth, "no colon here"}).status == 400);
  CHECK(answer("GET /v1/status HTTP/2.0\r\n" + host + "\r\n\r\n").status == 400);
  CHECK(answer("GET  /v1/status HTTP/1.1\r\n" + host + "\r\n\r\n").status == 400);  // two spaces
  CHECK(answer("\r\nGET /v1/status HTTP/1.1\r\n" + host + "\r\n\r\n").status == 400);  // empty request line
  CHECK_FALSE(limitCalled(s, "status"));
  // Twin: the same request, well formed.
  CHECK(get({host, auth, "X-A: a\tb"}).status == 200);
}

TEST_CASE("a body whose Content-Type is not JSON is answered 415; the connection stays usable") {
  ApiServer s;
  std::string body = R"({"topic":"typed"})";
  for (auto& via : kEveryWay) {
    INFO(via.name);
    auto post = [&](const std::string& contentType, RawConn& c) {
      auto lines = baseLines(s, via);
      if (!contentType.empty()) lines.push_back("Content-Type: " + contentType);
      lines.push_back("Content-Length: " + std::to_string(body.size()));
      c.send(head("POST /v1/events HTTP/1.1", lines) + body);
    };
    auto c = dial(s, via);
    post("text/plain", c);
    auto r = parse(c.readResponse());
    if (!via.token) {
      CHECK(r.status == 401);  // the token comes first: an unknown caller's body is never looked at
      continue;
    }
    CHECK(r.status == 415);
    CHECK(r.j["error"].get<std::string>().find("send Content-Type: application/json") != std::string::npos);
    CHECK(r.head.find("connection: close") == std::string::npos);
    // The refused body was small and complete: the next request on the same connection is served.
    auto again = dial(s, via);
    post("application/x-www-form-urlencoded", again);
    CHECK(parse(again.readResponse()).status == 415);
    again.send(head("GET /health HTTP/1.1", baseLines(s, via)));
    CHECK(again.readUntil("{\"ok\":true}").find("{\"ok\":true}") != std::string::npos);
    // Twins: JSON, with parameters, a +json type, and no Content-Type at all (curl -d with -H).
    for (auto type : {"application/json", "Application/JSON; charset=utf-8", "application/vnd.pine+json", ""}) {
      auto ok = dial(s, via);
      post(type, ok);
      CHECK_MESSAGE(parse(ok.readResponse()).status == 200, type);
    }
  }
  auto calls = s.calls();
  CHECK(std::count_if(calls.begin(), calls.end(), [](auto& c) { return c.rfind("publishEvent", 0) == 0; }) == 8);
}

TEST_CASE("a chunk size that overflows 64 bits is answered 400 and nothing after it is served") {
  ApiServer s;
  std::string body = R"({"topic":"chunky"})";
  // 2^64 + 18 wraps to 18 (the body's length) in a parser that does not check: the chunk would end
  // after the body and the smuggled request after it would be served as the next one.
  for (auto& via : kEveryWay) {
    INFO(via.name);
    auto smuggledLines = baseLines(s, Via{via.unix, true, ""});
    smuggledLines.push_back("Content-Length: 11");
    std::string smuggled = head("PUT /v1/state/smuggled HTTP/1.1", smuggledLines) + R"({"value":1})";
    auto lines = baseLines(s, via);
    lines.push_back("Transfer-Encoding: chunked");
    auto c = dial(s, via);
    c.send(head("POST /v1/events HTTP/1.1", lines) + "10000000000000012\r\n" + body + "\r\n0\r\n\r\n" + smuggled);
    auto r = parse(c.readResponse());
    if (via.token) {
      CHECK(r.status == 400);
      CHECK(r.j["error"].get<std::string>().find("chunk size overflows") != std::string::npos);
    } else {
      CHECK(r.status == 401);
    }
    CHECK(c.closedWithin(2000ms));
    CHECK(c.received().find("HTTP/1.1", 5) == std::string::npos);  // one answer, not two
    // Just under: sixteen hex digits (leading zeros) are a 64-bit number, and the chunk is read.
    auto ok = dial(s, via);
    ok.send(head("POST /v1/events HTTP/1.1", lines) + "00000000000000" + hex(body.size()) + "\r\n" + body +
            "\r\n0\r\n\r\n");
    CHECK(parse(ok.readResponse()).status == served(via));
  }
  CHECK_FALSE(limitCalled(s, "putState"));
  auto calls = s.calls();
  CHECK(std::count_if(calls.begin(), calls.end(), [](auto& c) { return c.rfind("publishEvent", 0) == 0; }) == 2);
  // Chunk extensions and a missing CRLF after a chunk's data are 400 too.
  CHECK(call(s, "POST", "/v1/events", hex(body.size()) + ";x=1\r\n" + body + "\r\n0\r\n\r\n",
             {"Transfer-Encoding: chunked"}).status == 400);
  CHECK(call(s, "POST", "/v1/events", hex(body.size()) + "\r\n" + body + "XX0\r\n\r\n", {"Transfer-Encoding: chunked"})
            .status == 400);
}

TEST_CASE("pipelined requests within the limits are all served, in order, on one connection") {
  ApiServer s;
  std::string body = R"({"topic":"p"})";
  std::string one = request(s, "POST", "/v1/events", body);
  std::string two = request(s, "POST", "/v1/events", hex(body.size()) + "\r\n" + body + "\r\n0\r\n\r\n",
                            {"Transfer-Encoding: chunked"});
  std::string three = request(s, "GET", "/v1/events?topic=" + std::string(4000, 'p'), "", {line("X-Pad", 8000)});
  auto c = RawConn::tcp(s.port());
  c.send(one + two + three);
  std::string all = c.readUntil("\"events\"");
  size_t n = 0;
  for (size_t at = all.find("HTTP/1.1 200"); at != std::string::npos; at = all.find("HTTP/1.1 200", at + 1)) n++;
  CHECK(n == 3);
}

TEST_CASE("pinectl's requests with large JSON bodies, within the body limit, are served") {
  ApiServer s;
  pine::ControlClient client(s.home());
  std::string big(900 << 10, 'v');
  auto r = client.request("PUT", "/v1/state/big", json{{"value", big}}.dump());
  CHECK(r.status == 200);
  std::string stored;
  s.run([&](FakeBackend& b) { stored = b.state["big"].get<std::string>(); });
  CHECK(stored == big);
  auto e = client.request("POST", "/v1/events", json{{"topic", "big"}, {"payload", big}}.dump());
  CHECK(e.status == 200);
}

TEST_CASE("what kj-http itself refuses (an unknown method) is JSON too, and ends the connection there") {
  // Found by fuzz-http_request (regressions/http_request/refused-head-after-a-closing-501): a
  // head that would be refused, pipelined after one kj-http answers 501, is never reached.
  ApiServer s;
  auto c = RawConn::unixSocket(s.socketPath());
  c.send("PoST /v1/reload HTTP/1.1\r\nHost: localhost\r\n\r\nTransfer-Transfer-Encoding: chunked\r\n\r\n");
  auto r = parse(c.readResponse());
  CHECK(r.status == 501);
  CHECK(r.j["error"] == "Unrecognized request method.");
  CHECK(r.head.find("connection: close") != std::string::npos);
  CHECK(c.closedWithin(2000ms));
  CHECK(c.received().find("HTTP/1.1", 5) == std::string::npos);  // the second head gets no answer
  CHECK_FALSE(limitCalled(s, "reload"));
  // Twin: the method in capitals.
  CHECK(roundTrip(s, request(s, "POST", "/v1/reload", "{}")).status == 200);
}

TEST_CASE("framing: nothing after a request that asked to close is passed on, and nothing is refused for it") {
  auto passed = [](const std::string& bytes, bool* closed, bool* refused) {
    pine::RequestFraming f;
    size_t n = f.scan(bytes.data(), bytes.size());
    *closed = f.closed();
    *refused = f.refusal().has_value();
    return n;
  };
  bool closed = false, refused = false;
  const std::string get = "GET /health HTTP/1.1\r\nHost: localhost\r\n";
  const std::string after = "OST /v1/events HTTP/1.1\r\n\r\n";  // would be answered (501) if passed on
  for (std::string close : {"Connection: close\r\n", "Connection: keep-alive, Close \r\n", "connection: x\r\nConnection: close\r\n"}) {
    std::string first = get + close + "\r\n";
    CHECK(passed(first + after, &closed, &refused) == first.size());
    CHECK(closed);
    CHECK_FALSE(refused);
  }
  // With a body: the body is passed, then nothing.
  std::string post = "POST /v1/events HTTP/1.1\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}";
  CHECK(passed(post + after, &closed, &refused) == post.size());
  CHECK(closed);
  std::string chunked = "POST /v1/events HTTP/1.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
  CHECK(passed(chunked + after, &closed, &refused) == chunked.size());
  CHECK(closed);
  // HTTP/1.0 closes unless it asks to be kept.
  std::string old = "GET /health HTTP/1.0\r\n\r\n";
  CHECK(passed(old + after, &closed, &refused) == old.size());
  CHECK(closed);
  // Twins: kept open, the next request is passed on (and this one is refused: no method like it).
  std::string kept = "GET /health HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n";
  CHECK(passed(kept + "GET /health HTTP/1.1\r\n\r\n", &closed, &refused) == kept.size() + 24);
  CHECK_FALSE(closed);
  std::string plain = get + "Connection: keep-alive\r\n\r\n";
  CHECK(passed(plain + plain, &closed, &refused) == 2 * plain.size());
  CHECK_FALSE(closed);
  CHECK_FALSE(refused);
  CHECK(passed(plain + "OST /v1/events HTTP/1.1\r\nHost: \x01\r\n\r\n", &closed, &refused) < plain.size() + 40);
  CHECK(refused);
  // A value that only contains the word is not close.
  std::string notClose = get + "Connection: closed, upgrade-close\r\n\r\n";
  CHECK(passed(notClose + plain, &closed, &refused) == notClose.size() + plain.size());
  CHECK_FALSE(closed);
}
