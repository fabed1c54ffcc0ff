// POST /hooks/<name>: the HTTP side only (the secret is checked behind the backend, by pined).
#include <doctest/doctest.h>

#include <set>

#include "tests/api/harness.h"

using namespace pine::apitest;
using namespace std::chrono_literals;

TEST_CASE("hooks: no control token; headers and the raw body reach the backend") {
  ApiServer s;
  std::string body = R"({"a":1})";
  auto r = roundTrip(s, request(s, "POST", "/hooks/gh", body,
                                {"Content-Type: application/json", "X-Hub-Signature-256: sha256=abc",
                                 "X-GitHub-Delivery: d-1"},
                                true, false));
  CHECK(r.status == 202);
  CHECK(r.j["event"] == "ev-1");
  std::string hdrs, got;
  s.run([&](FakeBackend& b) {
    REQUIRE(b.hooks.size() == 1);
    got = b.hooks[0].second.body;
    hdrs = b.hooks[0].second.headers["x-hub-signature-256"] + "|" + b.hooks[0].second.headers["x-github-delivery"];
  });
  CHECK(got == body);
  CHECK(hdrs == "sha256=abc|d-1");  // names lower-cased, values as sent
}

TEST_CASE("hooks: a header's value reaches the backend without the spaces around it") {
  // Else "X-GitHub-Delivery: d-1 " would be another delivery than "d-1" (delivered twice), and a
  // bearer token with a space after it would not match.
  ApiServer s;
  auto c = RawConn::tcp(s.port());
  c.send("POST /hooks/gh HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port()) +
         "\r\nContent-Length: 2\r\nX-GitHub-Delivery: \t d-1 \t\r\nAuthorization: Bearer tok \r\n\r\n{}");
  CHECK(parse(c.readResponse()).status == 202);
  std::string id, auth;
  s.run([&](FakeBackend& b) {
    REQUIRE(b.hooks.size() == 1);
    id = b.hooks[0].second.headers["x-github-delivery"];
    auth = b.hooks[0].second.headers["authorization"];
  });
  CHECK(id == "d-1");
  CHECK(auth == "Bearer tok");
}

TEST_CASE("Authorization or Content-Type twice, and an empty Transfer-Encoding, are 400 before any route; once each is taken") {
  // kj-http joins a repeated Authorization or Content-Type into one "a, b" value, so the hook
  // could not tell which copy was meant; an empty field it drops altogether.
  ApiServer s;
  const std::string head = "POST /hooks/gh HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port()) + "\r\n";
  for (const std::string& twice : {std::string("Authorization: Bearer wrong\r\nAuthorization: Bearer tok\r\n"),
                                   std::string("Content-Type: text/plain\r\ncontent-type: application/json\r\n"),
                                   std::string("Transfer-Encoding: \r\n")}) {
    CAPTURE(twice);
    auto c = RawConn::tcp(s.port());
    c.send(head + twice + "Content-Length: 2\r\n\r\n{}");
    CHECK(parse(c.readResponse()).status == 400);
  }
  size_t n = 1;
  s.run([&](FakeBackend& b) { n = b.hooks.size(); });
  CHECK(n == 0);
  auto once = RawConn::tcp(s.port());
  once.send(head + "Authorization: Bearer tok\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
  CHECK(parse(once.readResponse()).status == 202);
}

TEST_CASE("hooks: a header that came twice reaches the backend named as repeated, with its last copy") {
  ApiServer s;
  auto c = RawConn::tcp(s.port());
  c.send("POST /hooks/gh HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port()) +
         "\r\nContent-Length: 2\r\nX-GitHub-Delivery: d-1\r\nx-github-delivery: d-2\r\nX-Other: 1\r\n\r\n{}");
  CHECK(parse(c.readResponse()).status == 202);
  std::set<std::string> repeated;
  std::string id;
  s.run([&](FakeBackend& b) {
    REQUIRE(b.hooks.size() == 1);
    repeated = b.hooks[0].second.repeated;
    id = b.hooks[0].second.headers["x-github-delivery"];
  });
  CHECK(repeated == std::set<std::string>{"x-github-delivery"});
  CHECK(id == "d-2");
}

TEST_CASE("hooks: an unknown name is 404 without reading the body; GET is 405; a bad name 404") {
  ApiServer s;
  CHECK(roundTrip(s, request(s, "POST", "/hooks/nope", "{}", {}, true, false)).status == 404);
  CHECK(roundTrip(s, request(s, "GET", "/hooks/gh", "", {}, true, false)).status == 405);
  CHECK(roundTrip(s, request(s, "POST", "/hooks/a%2Fb", "{}", {}, true, false)).status == 404);
  CHECK(roundTrip(s, request(s, "POST", "/hooks/gh/x", "{}", {}, true, false)).status == 404);
}

TEST_CASE("hooks: a body over the hook's cap is 413 and never reaches the backend") {
  ApiServer s;
  auto r = roundTrip(s, request(s, "POST", "/hooks/gh", std::string(65, 'x'), {}, true, false));
  CHECK(r.status == 413);
  size_t n = 1;
  s.run([&](FakeBackend& b) { n = b.hooks.size(); });
  CHECK(n == 0);
}

TEST_CASE("hooks: a refused body's answer says the connection closes, and it does") {
  // The body is not read: the connection cannot carry another request. Before, the 413 came
  // without Connection: close and a keep-alive sender's next request met a closed socket.
  ApiServer s;
  auto c = RawConn::tcp(s.port());
  c.send("POST /hooks/gh HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port()) +
         "\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n\r\n");
  const std::string raw = c.readResponse();
  CHECK(parse(raw).status == 413);
  std::string head = raw.substr(0, raw.find("\r\n\r\n"));
  for (auto& ch : head) ch = (char)std::tolower((unsigned char)ch);
  CHECK(head.find("\r\nconnection: close") != std::string::npos);
  CHECK(c.closedWithin(2000ms));
}

TEST_CASE("hooks: the backend's 429 carries Retry-After") {
  ApiServer s;
  auto r = roundTrip(s, request(s, "POST", "/hooks/gh", "flood", {}, true, false));
  CHECK(r.status == 429);
  CHECK(r.head.find("retry-after: 17") != std::string::npos);
}

TEST_CASE("hooks: a browser (Origin) and a wrong Host are refused as on every route") {
  ApiServer s;
  CHECK(roundTrip(s, request(s, "POST", "/hooks/gh", "{}", {"Origin: http://evil.example"}, true, false)).status == 403);
  CHECK(roundTrip(s, request(s, "POST", "/hooks/gh", "{}", {"Host: evil.example"}, false, false)).status != 202);
}

TEST_CASE("hooks: trailer fields after the last chunk are one 400, and nothing is delivered") {
  ApiServer s;
  const std::string head = "POST /hooks/gh HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port()) +
                           "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  auto c = RawConn::tcp(s.port());
  c.send(head + "2\r\n{}\r\n0\r\nX-T: 1\r\n\r\n");
  const std::string raw = c.readResponse();
  auto r = parse(raw);
  CHECK(r.status == 400);
  CHECK(r.body.find("trailer fields") != std::string::npos);
  CHECK(raw.substr(0, raw.find("\r\n\r\n")).find("\r\nConnection: close") != std::string::npos);
  CHECK(c.closedWithin(2000ms));
  CHECK(c.received().find("HTTP/1.1", 8) == std::string::npos);  // one answer, not a 202 and then a 400
  size_t n = 1;
  s.run([&](FakeBackend& b) { n = b.hooks.size(); });
  CHECK(n == 0);
  // The legitimate twin: the same body ended as it should be is delivered.
  auto ok = RawConn::tcp(s.port());
  ok.send(head + "2\r\n{}\r\n0\r\n\r\n");
  CHECK(parse(ok.readResponse()).status == 202);
  s.run([&](FakeBackend& b) { n = b.hooks.size(); });
  CHECK(n == 1);
}

TEST_CASE("hooks: chunked coding in an HTTP/1.0 request is one 400 and nothing is delivered; in HTTP/1.1 it is taken") {
  // RFC 9112 6.1: HTTP/1.0 has no transfer codings, so such a request's framing is faulty.
  ApiServer s;
  const std::string rest = " HTTP/1.0\r\nHost: 127.0.0.1:" + std::to_string(s.port()) +
                           "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
  auto c = RawConn::tcp(s.port());
  c.send("POST /hooks/gh" + rest);
  auto r = parse(c.readResponse());
  CHECK(r.status == 400);
  CHECK(r.body.find("HTTP/1.0") != std::string::npos);
  CHECK(c.closedWithin(2000ms));
  size_t n = 1;
  s.run([&](FakeBackend& b) { n = b.hooks.size(); });
  CHECK(n == 0);
  // The twin: the same request as HTTP/1.1, and HTTP/1.0 with a Content-Length.
  auto ok = RawConn::tcp(s.port());
  ok.send("POST /hooks/gh HTTP/1.1" + rest.substr(9));
  CHECK(parse(ok.readResponse()).status == 202);
  auto old = RawConn::tcp(s.port());
  old.send("POST /hooks/gh HTTP/1.0\r\nHost: 127.0.0.1:" + std::to_string(s.port()) +
           "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
  CHECK(parse(old.readResponse()).status == 202);
  s.run([&](FakeBackend& b) { n = b.hooks.size(); });
  CHECK(n == 2);
}

TEST_CASE("hooks: a broken request pipelined after a delivery is refused after it; the delivery is not lost") {
  // The broken head arrived with the delivery's body (one write): it was taken for a refusal of
  // the delivery's own end and answered in its place, so a valid delivery was lost (a sender does
  // not retry a 400).
  ApiServer s;
  const std::string host = "Host: 127.0.0.1:" + std::to_string(s.port()) + "\r\n";
  const std::string delivery =
      "POST /hooks/gh HTTP/1.1\r\n" + host + "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
  for (const std::string& broken : {std::string("G\x01\r\n\r\n"), std::string("GET /health HTTP/2.0\r\n\r\n"),
                                   "GET /health HTTP/1.1\r\n" + host + "X-A : 1\r\n\r\n"}) {
    CAPTURE(broken);
    size_t before = 0, after = 0;
    s.run([&](FakeBackend& b) { before = b.hooks.size(); });
    auto c = RawConn::tcp(s.port());
    c.send(delivery + broken);
    CHECK(c.closedWithin(2000ms));
    const std::string all = c.received();
    CHECK(parse(all).status == 202);
    size_t second = all.find("HTTP/1.1", 8);
    REQUIRE(second != std::string::npos);
    CHECK(parse(all.substr(second)).status == 400);
    s.run([&](FakeBackend& b) { after = b.hooks.size(); });
    CHECK(after == before + 1);
  }
}

TEST_CASE("Connection: close ends the connection after its answer; without it the connection waits for more") {
  auto limits = ApiServer::testLimits();
  limits.keepalive = 5 * kj::SECONDS;  // long enough that only the request's wish can close it
  limits.headerTimeout = 5 * kj::SECONDS;
  ApiServer s(limits);
  const std::string host = "Host: 127.0.0.1:" + std::to_string(s.port()) + "\r\n";
  // Sends `req` on a new connection: its answer's status, whether the connection closed after it,
  // and whether the answer said it would (Connection: close, RFC 9112 9.6).
  auto answered = [&](const std::string& req) {
    auto c = RawConn::tcp(s.port());
    c.send(req);
    const std::string raw = c.readResponse();
    std::string head = raw.substr(0, raw.find("\r\n\r\n"));
    for (auto& ch : head) ch = (char)std::tolower((unsigned char)ch);
    return std::make_tuple(parse(raw).status, c.closedWithin(1000ms), head.find("\r\nconnection: close") != std::string::npos);
  };
  CHECK(answered("GET /health HTTP/1.1\r\n" + host + "Connection: keep-alive, Close\r\n\r\n") ==
        std::make_tuple(200, true, true));
  CHECK(answered("POST /hooks/gh HTTP/1.1\r\n" + host +
                 "Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}") ==
        std::make_tuple(202, true, true));
  CHECK(answered("POST /hooks/none HTTP/1.1\r\n" + host + "Content-Length: 2\r\nConnection: close\r\n\r\n{}") ==
        std::make_tuple(404, true, true));
  // HTTP/1.0 closes after each answer unless it asks to be kept.
  CHECK(answered("GET /health HTTP/1.0\r\n" + host + "\r\n") == std::make_tuple(200, true, true));
  CHECK(answered("GET /health HTTP/1.0\r\n" + host + "Connection: Keep-Alive\r\n\r\n") ==
        std::make_tuple(200, false, false));
  CHECK(answered("GET /health HTTP/1.1\r\n" + host + "\r\n") == std::make_tuple(200, false, false));
  // Pipelined, the version is each request's own: a 1.1 request ahead of a 1.0 one is answered
  // and the connection closes only after the second.
  auto both = RawConn::tcp(s.port());
  both.send("GET /health HTTP/1.1\r\n" + host + "\r\nGET /health HTTP/1.0\r\n" + host + "\r\n");
  CHECK(both.closedWithin(2000ms));
  size_t answers = 0;
  for (size_t at = both.received().find("HTTP/1.1 200"); at != std::string::npos;
       at = both.received().find("HTTP/1.1 200", at + 1))
    ++answers;
  CHECK(answers == 2);
  // Nothing sent after the request that asked to close is served.
  auto piped = RawConn::tcp(s.port());
  piped.send("GET /health HTTP/1.1\r\n" + host + "Connection: close\r\n\r\nGET /v1/status HTTP/1.1\r\n" + host + "\r\n");
  CHECK(piped.closedWithin(2000ms));
  CHECK(piped.received().find("HTTP/1.1 200") != std::string::npos);
  CHECK_MESSAGE(piped.received().find("HTTP/1.1", 8) == std::string::npos, piped.received());
  // Nor is a broken head after it answered (it was: a second, 400 answer after the close).
  for (std::string version : {"1.1", "1.0"}) {
    auto broken = RawConn::tcp(s.port());
    broken.send("GET /health HTTP/" + version + "\r\n" + host + (version == "1.1" ? "Connection: close\r\n" : "") +
                "\r\nOST /v1/events HTTP/1.1\r\n\r\n");
    CHECK(broken.closedWithin(2000ms));
    CHECK(broken.received().find("HTTP/1.1 200") == 0);
    CHECK_MESSAGE(broken.received().find("HTTP/1.1", 8) == std::string::npos, broken.received());
  }
  // The twin: a connection that did not ask stays open for its next request.
  auto kept = RawConn::tcp(s.port());
  kept.send("GET /health HTTP/1.1\r\n" + host + "Connection: keep-alive\r\n\r\n");
  CHECK(parse(kept.readResponse()).status == 200);
  CHECK_FALSE(kept.closedWithin(1500ms));
}
