// pinectl's commands against a real ControlApi on the home's unix socket.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "common/home.h"
#include "common/log.h"
#include "pinectl/commands.h"
#include "tests/api/harness.h"

using namespace pine::apitest;
using namespace std::chrono_literals;

// An output whose reader went away after `room` bytes, as a pipe into `head -1` does.
struct ReaderGone : std::streambuf {
  explicit ReaderGone(size_t room) : room(room) {}
  size_t room;
  std::string got;
  int_type overflow(int_type c) override {
    if (room == 0 || traits_type::eq_int_type(c, traits_type::eof())) return traits_type::eof();
    --room;
    got += traits_type::to_char_type(c);
    return c;
  }
};

static bool waitFor(ApiServer& s, const std::function<bool(FakeBackend&)>& pred) {
  for (int i = 0; i < 300; i++) {
    bool ok = false;
    s.run([&](FakeBackend& b) { ok = pred(b); });
    if (ok) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST_CASE("pinectl send streams progress and the approvals it waits on, then prints the answer") {
  ApiServer s;
  std::ostringstream out, err;
  int rc = -1;
  std::thread t([&] { rc = pine::cmdSend(s.home(), "main", "push it", true, false, out, err); });
  REQUIRE(waitFor(s, [](FakeBackend& b) { return b.tasksStarted == 1 && b.waiters.count("t1"); }));
  s.run([](FakeBackend& b) {
    b.feedObj.publish({{"kind", "progress"}, {"task", "t1"}, {"text", "bash: git status"}});
    b.feedObj.publish({{"kind", "approval"}, {"task", "t1"},
                       {"approval", {{"id", "a7"}, {"agent", "main"}, {"tool", "bash"},
                                     {"args", {{"command", "git push origin main"}}}, {"reason", "publishes"},
                                     {"state", "pending"}, {"alwaysOffered", true}}}});
    b.feedObj.publish({{"kind", "approval"}, {"task", "t1"}, {"approval", {{"id", "a7"}, {"state", "approved"}}}});
    b.finishTask("t1", "done", "Pushed.");
  });
  t.join();
  CHECK(rc == 0);
  CHECK(out.str() == "Pushed.\n");
  std::string e = err.str();
  CHECK(e.find("task t1") != std::string::npos);
  CHECK(e.find("bash: git status") != std::string::npos);
  CHECK(e.find("approval a7: main wants bash {\"command\":\"git push origin main\"}") != std::string::npos);
  CHECK(e.find("pinectl approve a7 [--always]") != std::string::npos);
  CHECK(e.find("pinectl deny a7") != std::string::npos);
  CHECK(e.find("approval a7: approved") != std::string::npos);
  CHECK(e.find("bash: git status") < e.find("approval a7: main"));
}

TEST_CASE("pinectl send exits 1 when the task failed or the agent is unknown; --no-wait prints the task") {
  ApiServer s;
  std::ostringstream out, err;
  int rc = -1;
  std::thread t([&] { rc = pine::cmdSend(s.home(), "main", "x", true, false, out, err); });
  REQUIRE(waitFor(s, [](FakeBackend& b) { return b.waiters.count("t1") > 0; }));
  s.run([](FakeBackend& b) { b.finishTask("t1", "failed", "the model is unreachable"); });
  t.join();
  CHECK(rc == 1);
  CHECK(out.str().empty());
  CHECK(err.str().find("task t1 failed: the model is unreachable") != std::string::npos);

  std::ostringstream out2, err2;
  CHECK(pine::cmdSend(s.home(), "nobody", "x", true, false, out2, err2) == 1);
  CHECK(err2.str().find("no agent 'nobody'") != std::string::npos);

  std::ostringstream out3, err3;
  CHECK(pine::cmdSend(s.home(), "main", "later", false, false, out3, err3) == 0);
  CHECK(out3.str() == "task t2 started (session main)\n");
}

TEST_CASE("pinectl approvals, approve, deny, mode, reset, state and schedules") {
  ApiServer s;
  std::ostringstream out, err;
  CHECK(pine::cmdApprovals(s.home(), false, out, err) == 0);
  CHECK(out.str().find("approval a1: main wants bash {\"command\":\"git push\"}") != std::string::npos);
  CHECK(pine::cmdApprove(s.home(), "a1", true, out, err) == 0);
  CHECK(pine::cmdDeny(s.home(), "a1", out, err) == 0);
  CHECK(pine::cmdDeny(s.home(), "nope", out, err) == 1);
  CHECK(err.str().find("no pending approval 'nope'") != std::string::npos);
  CHECK(pine::cmdMode(s.home(), "main", "manual", out, err) == 0);
  CHECK(pine::cmdMode(s.home(), "main", "yolo", out, err) == 1);
  CHECK(pine::cmdReset(s.home(), "main/side", out, err) == 0);
  CHECK(pine::cmdReset(s.home(), "main", out, err) == 0);
  CHECK(pine::cmdStateSet(s.home(), "house.temp", "{\"c\": 21}", out, err) == 0);
  CHECK(pine::cmdStateSet(s.home(), "house.temp", "not json", out, err) == 2);
  std::ostringstream got;
  CHECK(pine::cmdStateGet(s.home(), "house.temp", got, err) == 0);
  CHECK(json::parse(got.str())["c"] == 21);
  CHECK(pine::cmdStateGet(s.home(), "../etc", out, err) == 1);  // the server refuses the key
  std::ostringstream sched;
  CHECK(pine::cmdSchedules(s.home(), false, sched, err) == 0);
  CHECK(sched.str().find("0 7 * * *") != std::string::npos);
  auto calls = s.calls();
  auto has = [&](const std::string& c) { return std::find(calls.begin(), calls.end(), c) != calls.end(); };
  CHECK(has("approve a1 always"));
  CHECK(has("deny a1"));
  CHECK(has("setMode main {\"mode\":\"manual\"}"));
  CHECK(has("resetAgent main {\"session\":\"side\"}"));
  CHECK(has("resetAgent main {}"));
  CHECK(has("putState house.temp {\"value\":{\"c\":21}}"));
}

TEST_CASE("pinectl events lists, and with -f follows from where the list ended without a gap") {
  auto s = std::make_unique<ApiServer>();
  s->run([](FakeBackend& b) {
    b.addEvent("home/door", "open");
    b.addEvent("office/door", "open");
  });
  std::ostringstream list, err;
  CHECK(pine::cmdEvents(s->home(), false, "", false, list, err) == 0);
  CHECK(list.str().find("home/door") != std::string::npos);
  CHECK(list.str().find("office/door") != std::string::npos);

  std::ostringstream out, ferr;
  int rc = -1;
  std::thread t([&] { rc = pine::cmdEvents(s->home(), true, "home/#", false, out, ferr); });
  REQUIRE(waitFor(*s, [](FakeBackend& b) { return b.feedObj.subscribers() == 1; }));
  s->run([](FakeBackend& b) {
    b.addEvent("home/hall", "light");
    b.addEvent("office/hall", "light");
  });
  std::this_thread::sleep_for(200ms);
  s.reset();  // the stream ends when the server goes away
  t.join();
  CHECK(rc == 1);
  std::string o = out.str();
  CHECK(o.find("home/hall") != std::string::npos);
  CHECK(o.find("office") == std::string::npos);
  CHECK(ferr.str().find("closed the event stream") != std::string::npos);
}

TEST_CASE("pinectl events shows outside payloads and topics without terminal controls, on one line") {
  // A webhook's string payload reached the owner's terminal raw: it could clear the screen, write
  // the clipboard (OSC 52), retitle the window and overwrite the line (a review).
  nlohmann::json e = {{"seq", 4}, {"time", "2026-12-05T02:00:00.000Z"}, {"topic", "ext/\u202ehook"}, {"trust", "untrusted"},
                      {"payload", "X\u001b[2J\u001b]52;c;ZXZpbA==\u0007\u001b]0;pwned\u0007\rOVER\nLINE"}};
  std::string shown = pine::formatEvent(e);
  CHECK(shown == "4  2026-12-05T02:00:00.000Z  ext/<U+202E>hook  untrusted  XOVER LINE");
  // An object payload: dump() escapes C0 but not C1 or invisible reordering.
  e["payload"] = {{"k", "a\u009b31mb\u200bc"}};
  CHECK(pine::formatEvent(e).find("{\"k\":\"ab<U+200B>c\"}") != std::string::npos);
  e["payload"] = {{"t", 21.5}};  // the twin: plain JSON as it was
  CHECK(pine::formatEvent(e).find("{\"t\":21.5}") != std::string::npos);
}

TEST_CASE("pinectl logs: the last N lines, since a time, one event or a family of them, one agent, a text") {
  ApiServer s;
  const std::string path = pine::Home{s.home()}.audit();
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  const std::string now = pine::isoTime(pine::nowMs());
  std::ofstream(path) << R"({"ts":"2026-01-01T10:00:00.000Z","event":"task.start","role":"broker","pid":1,"agent":"main"})" "\n"
                      << R"({"ts":"2026-01-01T10:00:05.000Z","event":"task.end","role":"broker","pid":1,"agent":"main"})" "\n"
                      << R"({"ts":"2026-01-02T09:00:00.000Z","event":"hook.refused","role":"broker","pid":1,"why":"bad signature"})" "\n"
                      << R"({"ts":")" << now << R"(","event":"task.start","role":"broker","pid":1,"agent":"ops"})" "\n";
  auto run = [&](pine::LogsOptions o, int want = 0) {
    std::ostringstream out, err;
    o.json = true;
    int rc = pine::cmdLogs(s.home(), o, out, err);
    CHECK_MESSAGE(rc == want, err.str());
    std::vector<std::string> events;
    std::istringstream lines(out.str() + err.str());
    for (std::string l; std::getline(lines, l);) {
      auto j = nlohmann::json::parse(l, nullptr, false);
      events.push_back(j.is_object() ? j.value("event", "") + "/" + j.value("agent", "-") : l);
    }
    return events;
  };
  using V = std::vector<std::string>;
  CHECK(run({}) == V{"task.start/main", "task.end/main", "hook.refused/-", "task.start/ops"});
  pine::LogsOptions last2;
  last2.lines = 2;
  CHECK(run(last2) == V{"hook.refused/-", "task.start/ops"});
  pine::LogsOptions family;
  family.event = "task";
  CHECK(run(family) == V{"task.start/main", "task.end/main", "task.start/ops"});
  family.event = "task.end";
  CHECK(run(family) == V{"task.end/main"});
  family.event = "tas";  // a family is a whole word: "tas" is not "task"
  CHECK(run(family).empty());
  pine::LogsOptions agent;
  agent.agent = "ops";
  CHECK(run(agent) == V{"task.start/ops"});
  pine::LogsOptions text;
  text.grep = "bad signature";
  CHECK(run(text) == V{"hook.refused/-"});
  pine::LogsOptions recent;
  recent.since = "10m";
  CHECK(run(recent) == V{"task.start/ops"});
  recent.since = "2026-01-02";
  CHECK(run(recent) == V{"hook.refused/-", "task.start/ops"});
  recent.since = "2026-01-01T10:00:01";
  CHECK(run(recent) == V{"task.end/main", "hook.refused/-", "task.start/ops"});
  recent.since = "yesterday";
  auto bad = run(recent, 2);
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].find("write a time ago (90s, 10m, 2h, 3d) or a UTC time") != std::string::npos);
}

TEST_CASE("pinectl events -f and logs -f end when their reader has gone; with a reader they go on") {
  auto s = std::make_unique<ApiServer>();
  s->run([](FakeBackend& b) { b.addEvent("home/door", "open"); });
  // events -f: the listed event fits, the next one finds the reader gone.
  ReaderGone gone(40);  // the listed line (29 bytes) fits, the next does not
  std::ostream out(&gone);
  std::ostringstream err;
  auto follow = std::async(std::launch::async, [&] { return pine::cmdEvents(s->home(), true, "", false, out, err); });
  REQUIRE(waitFor(*s, [](FakeBackend& b) { return b.feedObj.subscribers() == 1; }));
  s->run([](FakeBackend& b) { b.addEvent("home/hall", "light"); });
  REQUIRE(follow.wait_for(5s) == std::future_status::ready);  // before: it followed until pine went away
  CHECK(follow.get() == 0);
  CHECK(gone.got.find("home/door") != std::string::npos);
  CHECK(err.str().empty());

  // logs -f: the same with the audit log.
  const std::string path = pine::Home{s->home()}.audit();
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << R"({"ts":"2026-01-01T10:00:00.000Z","event":"task.start","role":"broker","pid":1,"agent":"main"})" "\n";
  pine::LogsOptions o;
  o.follow = true;
  o.json = true;
  ReaderGone goneLogs(10);
  std::ostream logsOut(&goneLogs);
  std::ostringstream logsErr;
  auto logs = std::async(std::launch::async, [&] { return pine::cmdLogs(s->home(), o, logsOut, logsErr); });
  REQUIRE(logs.wait_for(5s) == std::future_status::ready);  // before: it polled the file for ever
  CHECK(logs.get() == 0);

  // The twin: a reader that stays gets the next event and the stream goes on.
  std::ostringstream kept, kerr;
  int rc = -1;
  std::thread t([&] { rc = pine::cmdEvents(s->home(), true, "", false, kept, kerr); });
  REQUIRE(waitFor(*s, [](FakeBackend& b) { return b.feedObj.subscribers() == 1; }));
  s->run([](FakeBackend& b) { b.addEvent("home/stairs", "light"); });
  std::this_thread::sleep_for(300ms);
  s.reset();
  t.join();
  CHECK(rc == 1);  // it followed until the server went away
  CHECK(kept.str().find("home/stairs") != std::string::npos);

}
