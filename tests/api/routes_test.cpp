// Every route reaches the backend with what the client sent, and the backend's answer reaches the client.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "tests/api/harness.h"

using namespace pine::apitest;

static bool calledExactly(ApiServer& s, const std::string& exact) {
  auto calls = s.calls();
  return std::find(calls.begin(), calls.end(), exact) != calls.end();
}

TEST_CASE("GET /v1/status adds where the API listens; /health is open") {
  ApiServer s;
  auto r = call(s, "GET", "/v1/status");
  REQUIRE(r.status == 200);
  CHECK(r.head.find("content-type: application/json") != std::string::npos);
  CHECK(r.j["api"]["unix"] == s.socketPath());
  CHECK(r.j["api"]["http"]["host"] == "127.0.0.1");
  CHECK(r.j["api"]["http"]["port"] == s.port());
  CHECK(call(s, "GET", "/health").j["ok"] == true);
}

TEST_CASE("the listing routes pass their query on and answer what the backend says") {
  ApiServer s;
  CHECK(call(s, "GET", "/v1/tasks").j.contains("tasks"));
  CHECK(call(s, "GET", "/v1/agents").j["agents"][0]["id"] == "main");
  CHECK(call(s, "GET", "/v1/approvals").j["approvals"][0]["id"] == "a1");
  CHECK(call(s, "GET", "/v1/schedules").j["schedules"][0]["id"] == "s1");
  CHECK(call(s, "GET", "/v1/events?topic=home%2Fdoor&limit=5").status == 200);
  CHECK(calledExactly(s, "listEvents limit=5 topic=home/door"));  // decoded before it reaches the backend
  CHECK(call(s, "POST", "/v1/reload").j["ok"] == true);  // an empty body counts as {}
  CHECK(calledExactly(s, "reload"));
}

TEST_CASE("publishing an event, and the backend's refusal passed on") {
  ApiServer s;
  auto r = call(s, "POST", "/v1/events", R"({"topic":"home/door","payload":{"open":true}})");
  CHECK(r.status == 200);
  CHECK(r.j["event"]["seq"] == 1);
  CHECK(call(s, "POST", "/v1/events", R"({"payload":1})").status == 400);  // the fake wants a topic
  auto list = call(s, "GET", "/v1/events");
  CHECK(list.j["events"].size() == 1);
}

// The event bus holds a group open for senders answered moments ago (returning_senders.h).
TEST_CASE("a sender answered for its event counts as coming back until it sends again, closes, or its time passes") {
  auto limits = ApiServer::testLimits();
  limits.senderReturn = 60 * kj::SECONDS;  // no expiry in this part
  limits.headerTimeout = 60 * kj::SECONDS;  // nor an idle connection closed by kj-http
  ApiServer s(limits);
  auto countBecomes = [&](size_t n) {
    for (int i = 0; i < 200; ++i) {  // the count changes just after the answer is written
      if (s.returningSenders() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  CHECK(s.returningSenders() == 0);
  auto c = RawConn::tcp(s.port());
  REQUIRE(c.send(request(s, "POST", "/v1/events", R"({"topic":"home/door","payload":1})")));
  CHECK(parse(c.readResponse()).status == 200);
  CHECK(countBecomes(1));
  // Other requests, on other connections, are not senders of events.
  CHECK(call(s, "GET", "/v1/status").status == 200);
  CHECK(call(s, "POST", "/v1/reload").status == 200);
  CHECK(s.returningSenders() == 1);
  // The sender sends again (anything): it is back.
  REQUIRE(c.send(request(s, "GET", "/v1/events")));
  CHECK(c.readUntil("\"events\"").find("\"events\"") != std::string::npos);  // the list's answer, the second
  CHECK(s.returningSenders() == 0);  // before its answer was written
  // A connection that closes leaves the count.
  {
    auto d = RawConn::tcp(s.port());
    REQUIRE(d.send(request(s, "POST", "/v1/events", R"({"topic":"home/window","payload":2})")));
    CHECK(parse(d.readResponse()).status == 200);
    CHECK(countBecomes(1));
  }
  CHECK(countBecomes(0));
  // A request that came with the answered one (pipelined, read before the answer) brings it back.
  {
    auto e = RawConn::tcp(s.port());
    REQUIRE(e.send(request(s, "POST", "/v1/events", R"({"topic":"home/door","payload":3})") +
                   request(s, "GET", "/v1/status")));
    auto both = e.readUntil("\"api\"");
    CHECK(both.find("HTTP/1.1 200") != std::string::npos);
    CHECK(s.returningSenders() == 0);
  }
  // A webhook's sender counts too.
  auto h = RawConn::tcp(s.port());
  REQUIRE(h.send("POST /hooks/gh HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(s.port()) +
                 "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"));
  CHECK(parse(h.readResponse()).status == 202);
  CHECK(countBecomes(1));
}

TEST_CASE("a sender that does not come back stops counting once its time has passed") {
  auto limits = ApiServer::testLimits();
  limits.senderReturn = 100 * kj::MILLISECONDS;
  ApiServer s(limits);
  auto c = RawConn::tcp(s.port());
  REQUIRE(c.send(request(s, "POST", "/v1/events", R"({"topic":"home/door","payload":1})")));
  CHECK(parse(c.readResponse()).status == 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  CHECK(s.returningSenders() == 0);  // the connection is still open: only the time ended it
  REQUIRE(c.send(request(s, "GET", "/v1/events")));
  CHECK(parse(c.readResponse()).status == 200);
}

TEST_CASE("agents: reset (with or without a session) and mode") {
  ApiServer s;
  CHECK(call(s, "POST", "/v1/agents/main/reset").status == 200);
  CHECK(calledExactly(s, "resetAgent main {}"));
  CHECK(call(s, "POST", "/v1/agents/main/reset", R"({"session":"side"})").j["session"] == "side");
  CHECK(call(s, "PUT", "/v1/agents/main/mode", R"({"mode":"manual"})").j["mode"] == "manual");
  CHECK(call(s, "PUT", "/v1/agents/main/mode", R"({"mode":"yolo"})").status == 400);
  CHECK(call(s, "POST", "/v1/agents/main/unknown").status == 404);
}

TEST_CASE("approvals: approve with and without always, deny, unknown id") {
  ApiServer s;
  CHECK(call(s, "POST", "/v1/approvals/a1/approve").status == 200);
  CHECK(calledExactly(s, "approve a1"));
  CHECK(call(s, "POST", "/v1/approvals/a1/approve", R"({"always":true})").status == 200);
  CHECK(calledExactly(s, "approve a1 always"));
  CHECK(call(s, "POST", "/v1/approvals/a1/deny").status == 200);
  CHECK(calledExactly(s, "deny a1"));
  CHECK(call(s, "POST", "/v1/approvals/zz/deny").status == 404);
  CHECK(call(s, "POST", "/v1/approvals/a.b/deny").status == 404);  // not an approval id: never reaches the backend
  CHECK_FALSE(calledExactly(s, "deny a.b"));
}

TEST_CASE("tasks: cancel by id, POST only; an id that is no task id never reaches the backend") {
  ApiServer s;
  CHECK(call(s, "POST", "/v1/tasks/t1/cancel").status == 200);
  CHECK(calledExactly(s, "cancel t1"));
  CHECK(call(s, "POST", "/v1/tasks/t2/cancel").status == 404);
  CHECK(call(s, "GET", "/v1/tasks/t1/cancel").status == 405);
  CHECK(call(s, "POST", "/v1/tasks/a!b/cancel").status == 404);
  CHECK_FALSE(calledExactly(s, "cancel a!b"));
}

TEST_CASE("messages: wait (the default) answers the record when the task ends; wait false answers 202 at once") {
  ApiServer s;
  auto quick = call(s, "POST", "/v1/agents/main/messages", R"({"text":"later","wait":false})");
  CHECK(quick.status == 202);
  CHECK(quick.j["task"] == "t1");
  CHECK(quick.j["session"] == "main");

  auto c = RawConn::tcp(s.port());
  c.send(request(s, "POST", "/v1/agents/main/messages", R"({"text":"now"})"));
  CHECK(c.readUntil("HTTP/1.1", std::chrono::milliseconds(300)).empty());  // nothing until the task ends
  s.run([](FakeBackend& b) { b.finishTask("t2", "done", "the answer"); });
  auto r = parse(c.readResponse());
  CHECK(r.status == 200);
  CHECK(r.j["answer"] == "the answer");

  CHECK(call(s, "POST", "/v1/agents/nobody/messages", R"({"text":"x"})").status == 404);
  CHECK(call(s, "POST", "/v1/agents/main/messages", R"({"text":"x","wait":"no"})").status == 400);
}
