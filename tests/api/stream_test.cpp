// Server-sent events: the event stream (replay, then live, no gap and no duplicate; topic
// filters; keepalive; a slow reader dropped) and a message's streamed answer.
#include <doctest/doctest.h>

#include "pinectl/http_client.h"
#include "tests/api/harness.h"

using namespace pine::apitest;
using namespace std::chrono_literals;

// The events in what arrived so far (chunked framing undone).
static std::vector<pine::SseEvent> eventsIn(const std::string& raw) {
  std::vector<pine::SseEvent> out;
  size_t headEnd = raw.find("\r\n\r\n");
  if (headEnd == std::string::npos) return out;
  pine::ChunkedDecoder dec;
  std::string payload;
  dec.feed(std::string_view(raw).substr(headEnd + 4), payload);
  pine::SseParser p;
  p.feed(payload, [&](const pine::SseEvent& e) {
    out.push_back(e);
    return true;
  });
  return out;
}

static std::vector<long long> seqs(const std::vector<pine::SseEvent>& events) {
  std::vector<long long> out;
  for (auto& e : events)
    if (e.event == "event") out.push_back(std::stoll(e.id));
  return out;
}

static void waitForSubscribers(ApiServer& s, size_t n) {
  for (int i = 0; i < 200; i++) {
    size_t have = 0;
    s.run([&](FakeBackend& b) { have = b.feedObj.subscribers(); });
    if (have >= n) return;
    std::this_thread::sleep_for(10ms);
  }
  FAIL("no SSE subscriber appeared");
}

TEST_CASE("the event stream replays after a seq, then goes live without a gap or a duplicate") {
  ApiServer s;
  s.run([](FakeBackend& b) {
    for (int i = 1; i <= 7; i++) b.addEvent("t/" + std::to_string(i), i);
  });
  auto c = RawConn::tcp(s.port());
  c.send(request(s, "GET", "/v1/events/stream?after=2"));
  c.readUntil("id: 7\n");
  CHECK(parse(c.received()).head.find("content-type: text/event-stream") != std::string::npos);
  waitForSubscribers(s, 1);
  s.run([](FakeBackend& b) {
    b.addEvent("t/8", 8);
    b.addEvent("t/9", 9);
  });
  c.readUntil("id: 9\n");
  CHECK(seqs(eventsIn(c.received())) == std::vector<long long>{3, 4, 5, 6, 7, 8, 9});
  auto events = eventsIn(c.received());
  auto data = json::parse(events[0].data);
  CHECK(data["topic"] == "t/3");

  // Last-Event-ID resumes the same way (and wins over ?after).
  auto again = RawConn::tcp(s.port());
  again.send(request(s, "GET", "/v1/events/stream?after=1", "", {"Last-Event-ID: 8"}));
  again.readUntil("id: 9\n");
  CHECK(seqs(eventsIn(again.received())) == std::vector<long long>{9});
  CHECK(call(s, "GET", "/v1/events/stream", "", {"Last-Event-ID: abc"}).status == 400);

  // Past the newest event (a store made anew): from the newest on, and said so. Before, every
  // event up to that seq was dropped as already sent, and the stream stayed silent.
  auto ahead = RawConn::tcp(s.port());
  ahead.send(request(s, "GET", "/v1/events/stream", "", {"Last-Event-ID: 999999999"}));
  ahead.readUntil("past the newest event (9)");
  waitForSubscribers(s, 3);
  s.run([](FakeBackend& b) { b.addEvent("t/10", 10); });
  ahead.readUntil("id: 10\n");
  CHECK(seqs(eventsIn(ahead.received())) == std::vector<long long>{10});
}

TEST_CASE("an event told twice, or committed while the replay is written, is sent once and in order") {
  ApiServer s;
  s.run([](FakeBackend& b) {
    for (int i = 1; i <= 5; i++) b.addEvent("t", i);
  });
  auto c = RawConn::tcp(s.port());
  c.send(request(s, "GET", "/v1/events/stream?after=0"));
  // Publish as soon as the stream subscribes, racing the replay.
  waitForSubscribers(s, 1);
  s.run([](FakeBackend& b) {
    // seq 5 again: committed before, told late
    b.feedObj.publish(pine::eventFeedItem("t", 5, b.events[4].dump()));
    b.addEvent("t", 6);
  });
  c.readUntil("id: 6\n");
  std::this_thread::sleep_for(100ms);
  c.readUntil("never", 50ms);
  CHECK(seqs(eventsIn(c.received())) == std::vector<long long>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("topic filters use MQTT wildcards, in the replay and live") {
  ApiServer s;
  s.run([](FakeBackend& b) {
    b.addEvent("home/kitchen/temp", 1);
    b.addEvent("home/door", 2);
    b.addEvent("office/kitchen/temp", 3);
  });
  auto c = RawConn::tcp(s.port());
  c.send(request(s, "GET", "/v1/events/stream?after=0&topic=home%2F%2B%2Ftemp"));  // home/+/temp
  c.readUntil("id: 1\n");
  waitForSubscribers(s, 1);
  s.run([](FakeBackend& b) {
    b.addEvent("home/hall/temp", 4);
    b.addEvent("home/hall/humidity", 5);
    b.addEvent("home/cellar/temp", 6);
  });
  c.readUntil("id: 6\n");
  CHECK(seqs(eventsIn(c.received())) == std::vector<long long>{1, 4, 6});

  auto all = RawConn::tcp(s.port());
  all.send(request(s, "GET", "/v1/events/stream?after=0&topic=home%2F%23"));  // home/#
  all.readUntil("id: 6\n");
  CHECK(seqs(eventsIn(all.received())) == std::vector<long long>{1, 2, 4, 5, 6});
}

TEST_CASE("a quiet stream gets keepalive comments; a reader that falls behind is dropped") {
  pine::ControlApiLimits limits = ApiServer::testLimits();
  limits.sseQueue = 4;
  ApiServer s(limits);
  auto quiet = RawConn::tcp(s.port());
  quiet.send(request(s, "GET", "/v1/events/stream"));
  CHECK(quiet.readUntil(": keepalive\n\n", 2000ms).find(": keepalive\n\n") != std::string::npos);

  // The event loop publishes more than the queue holds before the stream can write any of it.
  auto slow = RawConn::tcp(s.port());
  slow.send(request(s, "GET", "/v1/events/stream"));
  slow.readUntil(": stream open\n\n");
  s.run([](FakeBackend& b) {
    for (int i = 0; i < 10; i++) b.addEvent("flood", i);
  });
  CHECK(slow.closedWithin(3000ms));
  CHECK(slow.received().find("event: overflow") != std::string::npos);
  // Twin: a reader that keeps up stays connected and gets everything.
  auto ok = RawConn::tcp(s.port());
  ok.send(request(s, "GET", "/v1/events/stream"));
  ok.readUntil(": stream open\n\n");  // subscribed before the head is sent
  s.run([](FakeBackend& b) { b.addEvent("calm", 1); });
  ok.readUntil("id: 11\n");
  CHECK(seqs(eventsIn(ok.received())) == std::vector<long long>{11});
  CHECK_FALSE(ok.closedWithin(100ms));
}

TEST_CASE("a streamed message: task, then its progress and approvals only, then done with the record") {
  ApiServer s;
  auto c = RawConn::tcp(s.port());
  c.send(request(s, "POST", "/v1/agents/main/messages", R"({"text":"do it","stream":true})"));
  c.readUntil("event: task\n");
  s.run([](FakeBackend& b) {
    b.feedObj.publish({{"kind", "progress"}, {"task", "t1"}, {"text", "reading files"}});
    b.feedObj.publish({{"kind", "progress"}, {"task", "other"}, {"text", "not for us"}});
    b.feedObj.publish({{"kind", "approval"}, {"task", "t1"},
                       {"approval", {{"id", "a1"}, {"tool", "bash"}, {"state", "pending"}}}});
    b.feedObj.publish({{"kind", "progress"}, {"task", "t1"}, {"text", "pushing"}});
    b.finishTask("t1", "done", "pushed");  // in the same turn: queued progress still comes first
  });
  c.readUntil("event: done\n");
  c.readUntil("0\r\n\r\n");
  auto events = eventsIn(c.received());
  std::vector<std::string> names;
  for (auto& e : events) names.push_back(e.event);
  REQUIRE(names == std::vector<std::string>{"task", "progress", "approval", "progress", "done"});
  CHECK(json::parse(events[0].data)["task"] == "t1");
  CHECK(json::parse(events[1].data)["text"] == "reading files");
  CHECK(json::parse(events[4].data)["answer"] == "pushed");
  CHECK(c.received().find("not for us") == std::string::npos);
}

TEST_CASE("Accept: text/event-stream asks for the stream too; a refused message is a plain JSON error") {
  ApiServer s;
  auto c = RawConn::tcp(s.port());
  c.send(request(s, "POST", "/v1/agents/main/messages", R"({"text":"hi"})", {"Accept: text/event-stream"}));
  c.readUntil("event: task\n");
  s.run([](FakeBackend& b) { b.finishTask("t1", "failed", "model unreachable"); });
  c.readUntil("event: done\n");
  c.readUntil("0\r\n\r\n");
  auto events = eventsIn(c.received());
  REQUIRE(events.size() == 2);
  CHECK(json::parse(events[1].data)["error"] == "model unreachable");
  auto refused = call(s, "POST", "/v1/agents/nobody/messages", R"({"text":"hi","stream":true})");
  CHECK(refused.status == 404);
  CHECK(refused.head.find("application/json") != std::string::npos);
}
