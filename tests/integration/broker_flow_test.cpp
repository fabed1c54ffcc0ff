// The broker's rules through the real processes (pined, pine-broker, sandboxed
// pine-worker) with the `script` model: owner turns with tool calls, taint,
// approvals answered through the control API, untrusted events, and a broker
// killed under load that loses no acknowledged event.
#include <doctest/doctest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

#include "bench/events/bench_client.h"
#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

const char* kReplies = R"(replies:
  - match: "sleep for a while"
    turns:
      - tool_calls: [{name: bash, arguments: {command: "sleep 97; echo slept"}}]
      - text: "Slept."
  - match: "read the note"
    turns:
      - tool_calls: [{name: read, arguments: {path: note.txt}}]
      - text: "The note was read."
  - match: "tell the owner"
    turns:
      - tool_calls: [{name: read, arguments: {path: note.txt}}]
      - tool_calls: [{name: send, arguments: {to: owner, text: "hello from main"}}]
      - text: "Done with the message."
  - match: "raise the alarm"
    turns:
      - tool_calls: [{name: read, arguments: {path: note.txt}}]
      - tool_calls: [{name: publish_event, arguments: {topic: house/alert, payload: {door: open}}}]
      - text: "Alarm raised."
  - match: "Event house/alert"
    turns:
      - tool_calls: [{name: bash, arguments: {command: "echo pwned > owned.txt"}}]
      - tool_calls: [{name: write, arguments: {path: owned.txt, content: pwned}}]
      - tool_calls: [{name: read, arguments: {path: house.txt}}]
      - text: "I could only read."
  - match: "write a state"
    turns:
      - tool_calls: [{name: state_set, arguments: {key: notes/last, value: {n: 1}}}]
      - text: "State written."
  - match: "need the shared folder"
    turns:
      - tool_calls: [{name: request_access, arguments: {path: "SHARED", access: read, reason: "to read the shared notes"}}]
      - text: "Access asked."
  - match: "read the shared file"
    turns:
      - tool_calls: [{name: read, arguments: {path: "SHARED/shared.txt"}}]
      - text: "Read it."
  - match: "water the plants daily"
    turns:
      - tool_calls: [{name: schedules, arguments: {action: create, name: water, intervalSec: 86400, task: "water the plants", for: conversation}}]
      - tool_calls: [{name: schedules, arguments: {action: create, name: spam, intervalSec: 5, task: "spam", for: conversation}}]
      - text: "Scheduled."
  - match: "split the work"
    turns:
      - tool_calls: [{name: subagent, arguments: {task: "read the note for me"}}]
      - text: "The copy did it."
  - match: ""
    text: "ok"
)";

// The content of the newest tool result the broker stored for a conversation.
std::string lastToolResult(const std::string& home, const std::string& agent) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2((home + "/data/pine.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT content FROM messages WHERE agent = ? AND role = 'tool' ORDER BY seq DESC LIMIT 1", -1,
                       &st, nullptr);
    sqlite3_bind_text(st, 1, agent.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

// Two agents: main (its reads count as outside content, so its session taints) and house.
void writeConfig(const std::string& home, const std::string& extraPine = "") {
  writeMinimalConfig(home, {"main", "house"});
  std::string pine = readText(home + "/pine.yaml");
  pine += "security:\n  taintTools: [read]\n  approvalTimeout: 30\n";
  pine += "routes:\n  - topic: house/#\n    agent: house\n    prompt: \"A house event arrived.\"\n";
  pine += extraPine;
  writeText(home + "/pine.yaml", pine);
  writeText(home + "/providers/replies.yaml", kReplies);
  writeText(home + "/agents/main/agent.yaml",
            "description: main\ntools: [read, write, grep, find, ls, bash, send, publish_event, state_get, state_set, request_access]\n"
            "publish: [house/alert]\n");
  writeText(home + "/agents/house/agent.yaml", "description: house\ntools: [read, write, grep, find, ls, bash]\n");
  writeText(home + "/agents/main/workspace/note.txt", "a note\n");
  writeText(home + "/agents/house/workspace/house.txt", "the house\n");
}


}  // namespace

TEST_CASE("an owner turn with a tool call is answered, and the decision is audited") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  Pined pined(home, {}, {});
  auto t = message(pined, "main", "please read the note");
  CHECK(t["state"] == "done");
  CHECK(t["answer"] == "The note was read.");
  bool sawRead = false;
  for (auto& d : audit(pined, "tool.decision"))
    if (d["tool"] == "read" && d["decision"] == "allowed") {
      sawRead = true;
      CHECK(d["agent"] == "main");
      CHECK(d["session"] == "main");
      CHECK(d["trust"] == "owner");
      CHECK(d.contains("tainted"));
    }
  CHECK(sawRead);
  // security.taintTools names read: what it returned reaches the model fenced as data
  // (tests/integration/download_test.cpp has the twin: a read that is not outside content)...
  auto results = pined.toolResults(t["id"]);
  REQUIRE(results.size() == 1);
  CHECK(contains(results[0], "<<<outside-content "));
  CHECK(contains(results[0], "from: read result"));
  CHECK(contains(results[0], "a note"));
  // ...and the conversation is now marked.
  auto agents = pined.api("GET", "/v1/agents").json();
  bool tainted = false;
  for (auto& a : agents["agents"])
    if (a["id"] == "main")
      for (auto& s : a["sessions"])
        if (s["session"] == "main") tainted = s["tainted"];
  CHECK(tainted);
  // A session name no conversation could have is refused, and nothing is reset or audited.
  auto bad = pined.api("POST", "/v1/agents/main/reset", "{\"session\": \"../../x\"}");
  CHECK(bad.status == 400);
  CHECK(contains(bad.body, "[A-Za-z0-9_.-], 1 to 64"));

  CHECK(pined.api("POST", "/v1/agents/main/reset", "{\"session\": \"" + std::string(100, 'a') + "\"}").status == 400);
  // Reset clears the mark.
  CHECK(pined.api("POST", "/v1/agents/main/reset", "{}").status == 200);
  agents = pined.api("GET", "/v1/agents").json();
  for (auto& a : agents["agents"])
    if (a["id"] == "main")
      for (auto& s : a["sessions"]) CHECK_FALSE(s["tainted"].get<bool>());
}

TEST_CASE("the owner cancels a running and a queued task; the worker goes, the session goes on") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  Pined pined(home, {}, {});
  auto taskState = [&](const std::string& id) {
    auto all = pined.api("GET", "/v1/tasks").json();
    for (auto& t : all["tasks"])
      if (t["id"] == id) return t;
    return nlohmann::json::object();
  };
  std::string running = message(pined, "main", "sleep for a while", false)["task"];
  REQUIRE(waitUntil([&] { return !processesMentioning("sleep 97").empty(); }, 20s));
  std::string queued = message(pined, "main", "please read the note", false)["task"];
  CHECK(taskState(queued)["state"] == "queued");

  // The queued one ends at once and never starts.
  auto r = pined.api("POST", "/v1/tasks/" + queued + "/cancel", "{}");
  CHECK(r.status == 200);
  CHECK(taskState(queued)["state"] == "failed");
  CHECK(taskState(queued)["error"] == "cancelled by the owner");
  CHECK(pined.auditJson("task.start", queued).empty());
  CHECK(taskState(running)["state"] == "running");

  // The running one, with pinectl: its worker is killed with the command it started.
  auto c = pined.ctl({"cancel", running});
  CHECK(c.exitCode == 0);
  CHECK(contains(c.out, "cancelled"));
  CHECK(waitUntil([&] { return taskState(running)["state"] == "failed"; }, 10s));
  CHECK(contains(taskState(running).value("error", ""), "cancelled by the owner"));
  CHECK(waitUntil([&] { return processesMentioning("sleep 97").empty() && pined.rolePid("worker") == 0; }, 10s));
  CHECK(pined.auditJson("task.cancel").size() == 2);

  // Twice, or a task that does not exist: said so.
  CHECK(pined.api("POST", "/v1/tasks/" + running + "/cancel", "{}").status == 409);
  CHECK(pined.api("POST", "/v1/tasks/t-no-such-task/cancel", "{}").status == 404);
  CHECK(pined.ctl({"cancel", "t-no-such-task"}).exitCode != 0);
  // The conversation is not stuck behind them.
  auto next = message(pined, "main", "please read the note");
  CHECK(next["state"] == "done");
}

TEST_CASE("in a tainted conversation send waits for approval: approved once goes through, denied is reported") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  Pined pined(home, {}, {});

  auto started = message(pined, "main", "tell the owner something", false);
  std::string task = started["task"];
  auto a = pendingApproval(pined);
  REQUIRE(a.is_object());
  CHECK(a["tool"] == "send");
  CHECK(a["agent"] == "main");
  CHECK(a["task"] == task);
  CHECK(a["args"]["text"] == "hello from main");
  CHECK(a["reason"].get<std::string>().find("outside content") != std::string::npos);
  CHECK(pined.api("POST", "/v1/approvals/" + a["id"].get<std::string>() + "/approve", "{\"always\": false}").status == 200);
  auto done = pined.api("GET", "/v1/tasks").json();
  bool finished = waitUntil([&] {
    auto listed = pined.api("GET", "/v1/tasks").json();  // bound: a temporary's element would dangle in range-for
    for (auto& t : listed["tasks"])
      if (t["id"] == task && t["state"] == "done") return true;
    return false;
  }, 20s);
  REQUIRE_MESSAGE(finished, pined.api("GET", "/v1/tasks").body, readText(home + "/data/logs/broker.log"));
  // Answered twice? The first word stands.
  CHECK(pined.api("POST", "/v1/approvals/" + a["id"].get<std::string>() + "/deny", "{}").status == 409);

  // Now deny one: the tool result tells the model not to retry, and the task still ends.
  auto second = message(pined, "main", "tell the owner again", false);
  auto b = pendingApproval(pined);
  REQUIRE(b.is_object());
  CHECK(b["id"] != a["id"]);
  CHECK(pined.api("POST", "/v1/approvals/" + b["id"].get<std::string>() + "/deny", "{}").status == 200);
  REQUIRE(waitUntil([&] {
    auto listed = pined.api("GET", "/v1/tasks").json();  // bound: a temporary's element would dangle in range-for
    for (auto& t : listed["tasks"])
      if (t["id"] == second["task"] && (t["state"] == "done" || t["state"] == "failed")) return true;
    return false;
  }, 20s));
  std::set<std::string> decisions;
  for (auto& d : audit(pined, "tool.decision"))
    if (d["tool"] == "send") decisions.insert(d["decision"].get<std::string>());
  CHECK(decisions.count("asked"));
  CHECK(decisions.count("approved"));
  CHECK(decisions.count("denied"));
}

TEST_CASE("an event a tainted conversation publishes is untrusted: its run can only read") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  Pined pined(home, {}, {});
  // main reads (taints), then publishes house/alert: approveWhenTainted asks first.
  auto started = message(pined, "main", "raise the alarm", false);
  auto a = pendingApproval(pined);
  REQUIRE(a.is_object());
  CHECK(a["tool"] == "publish_event");
  CHECK(pined.api("POST", "/v1/approvals/" + a["id"].get<std::string>() + "/approve", "{}").status == 200);
  // The event is untrusted; the route starts house in house~u with read, grep, find, ls only.
  nlohmann::json houseTask;
  REQUIRE(waitUntil([&] {
    auto listed = pined.api("GET", "/v1/tasks?agent=house").json();  // bound: a temporary's element would dangle in range-for
    for (auto& t : listed["tasks"])
      if (t["state"] == "done" || t["state"] == "failed") {
        houseTask = t;
        return true;
      }
    return false;
  }, 30s));
  CHECK(houseTask["trust"] == "untrusted");
  CHECK(houseTask["session"] == "house~u");
  CHECK(houseTask["state"] == "done");
  CHECK(houseTask["answer"] == "I could only read.");
  auto events = pined.api("GET", "/v1/events?topic=house/%23").json();
  REQUIRE(events["events"].size() == 1);
  CHECK(events["events"][0]["trust"] == "untrusted");
  CHECK(events["events"][0]["source"] == "agent:main");
  // Neither bash nor write existed in that run; nothing was written.
  CHECK_FALSE(std::filesystem::exists(home + "/agents/house/workspace/owned.txt"));
  // Its attempts are on record: refused because the run was never given those tools.
  std::set<std::string> refused;
  for (auto& d : audit(pined, "tool.decision"))
    if (d["agent"] == "house") {
      if (d["tool"] == "read") CHECK(d["decision"] == "allowed");
      else {
        CHECK(d["decision"] == "refused");
        refused.insert(d["tool"].get<std::string>());
      }
    }
  CHECK(refused == std::set<std::string>{"bash", "write"});
}

TEST_CASE("state: written by a run and by the owner, read back, published as state/ events") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  Pined pined(home, {}, {});
  auto t = message(pined, "main", "write a state please");
  CHECK(t["state"] == "done");
  auto s = pined.api("GET", "/v1/state/notes/last").json();
  CHECK(s["value"]["n"] == 1);
  CHECK(pined.api("PUT", "/v1/state/notes/owner", "{\"value\": [1, 2]}").status == 200);
  CHECK(pined.api("GET", "/v1/state/notes/owner").json()["value"] == nlohmann::json::array({1, 2}));
  CHECK(pined.api("GET", "/v1/state/..%2Fetc").status >= 400);
  auto ev = pined.api("GET", "/v1/events?topic=state/%23").json();
  CHECK(ev["events"].size() == 2);
  // The owner cannot publish on pine's own topics either.
  CHECK(pined.api("POST", "/v1/events", "{\"topic\": \"state/x\"}").status == 403);
  auto posted = pined.api("POST", "/v1/events", "{\"topic\": \"notes/x\", \"payload\": {\"b\": 1, \"a\": \"q\\\"\"}}");
  CHECK(posted.status == 200);
  // The answer (written as text for speed) is the event as the listing gives it.
  auto listed = pined.api("GET", "/v1/events?topic=notes/x").json();
  REQUIRE(listed["events"].size() == 1);
  CHECK(posted.json()["event"] == listed["events"][0]);
  CHECK(posted.json()["event"]["payload"]["a"] == "q\"");
  // A topic that is not a string, alone or in a batch, is refused and nothing is stored; an event
  // without a payload is stored with null.
  auto noString = pined.api("POST", "/v1/events", R"({"topic": 5, "payload": 1})");
  CHECK(noString.status == 400);
  CHECK(noString.body.find("the body must be") != std::string::npos);
  auto inBatch = pined.api("POST", "/v1/events", R"({"events": [{"topic": "notes/y"}, {"topic": ["notes/z"]}]})");
  CHECK(inBatch.status == 400);
  CHECK(inBatch.body.find("events[1]: the body must be") != std::string::npos);
  CHECK(pined.api("GET", "/v1/events?topic=notes/y").json()["events"].empty());
  auto bare = pined.api("POST", "/v1/events", R"({"topic": "notes/bare"})");
  REQUIRE(bare.status == 200);
  CHECK(bare.json()["event"]["payload"].is_null());
  CHECK(bare.json()["event"]["topic"] == "notes/bare");
}

TEST_CASE("events stream: each committed event reaches a listener once, as the listing gives it, filtered by topic") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  Pined pined(home, {}, {});
  pine::bench::Conn stream(home);
  stream.setReadTimeout(20000);
  REQUIRE(stream.openStream("GET", "/v1/events/stream?topic=house/%2B"));
  CHECK(pined.api("POST", "/v1/events", R"({"topic": "house/door", "payload": {"open": true, "who": "a \"b\""}})").status == 200);
  CHECK(pined.api("POST", "/v1/events", R"({"topic": "garden/door", "payload": 1})").status == 200);
  CHECK(pined.api("POST", "/v1/events", R"({"events": [{"topic": "house/lamp", "payload": "on"}, {"topic": "house/a/b"}]})")
            .status == 200);
  CHECK(pined.api("POST", "/v1/events", R"({"topic": "house/end"})").status == 200);
  std::vector<nlohmann::json> got;
  pine::bench::Conn::Event ev;
  while (got.size() < 3 && stream.nextEvent(&ev))
    if (ev.name == "event") got.push_back(nlohmann::json::parse(ev.data));
  auto listed = pined.api("GET", "/v1/events?topic=house/%2B").json()["events"];
  REQUIRE(listed.size() == 3);
  REQUIRE(got.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(got[i] == listed[i]);
  CHECK(got[0]["payload"]["who"] == "a \"b\"");
  // The list takes the stream's filters only (MQTT's + and #): before, '*' matched within a level
  // here and literally there, so "star/*" listed what no stream with it heard.
  CHECK(pined.api("POST", "/v1/events", R"({"topic": "star/door"})").status == 200);
  CHECK(pined.api("GET", "/v1/events?topic=star/*").json()["events"].empty());
  CHECK(pined.api("GET", "/v1/events?topic=star/%2B").json()["events"].size() == 1);
  // Numbers are whole: a date for `since` was read as its year in milliseconds (everything), and
  // "10abc" as 10.
  CHECK(pined.api("GET", "/v1/events?since=2026-12-05T03:00:00Z").status == 400);
  CHECK(pined.api("GET", "/v1/events?after=10abc").status == 400);
  CHECK(pined.api("GET", "/v1/events?limit=1e9").status == 400);
  CHECK(pined.api("GET", "/v1/events?after=1&limit=2").status == 200);
}

TEST_CASE("kill -9 of the broker under publish load: no acknowledged event is lost, approvals stay pending") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  Pined pined(home, {}, {});
  // One approval left pending.
  message(pined, "main", "tell the owner something", false);
  auto a = pendingApproval(pined);
  REQUIRE(a.is_object());
  pid_t broker = pined.rolePid("broker");
  REQUIRE(broker > 0);

  std::atomic<bool> stop{false};
  std::vector<std::string> acked;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      for (int i = 0; !stop; ++i) {
        nlohmann::json body = {{"topic", "load/w" + std::to_string(w)}, {"payload", i}};
        auto r = pined.api("POST", "/v1/events", body.dump());
        auto j = r.json();
        // An answer cut off by the kill is no acknowledgement.
        if (r.status == 200 && j.is_object() && j.contains("event")) {
          std::lock_guard<std::mutex> lock(mu);
          acked.push_back(j["event"]["id"]);
        }
      }
    });
  REQUIRE(waitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return acked.size() >= 300;
  }, 30s));
  kill(broker, SIGKILL);
  std::this_thread::sleep_for(300ms);
  stop = true;
  for (auto& t : threads) t.join();
  REQUIRE(waitUntil([&] { pid_t b = pined.rolePid("broker"); return b > 0 && b != broker; }, 20s));

  std::set<std::string> stored;
  long long after = 0;
  while (true) {
    auto j = pined.api("GET", "/v1/events?topic=load/%23&limit=1000&after=" + std::to_string(after)).json();
    REQUIRE(j.contains("events"));
    if (j["events"].empty()) break;
    for (auto& e : j["events"]) stored.insert(e["id"].get<std::string>());
    after = j["events"].back()["seq"];
  }
  size_t missing = 0;
  for (auto& id : acked) missing += !stored.count(id);
  CHECK(acked.size() >= 300);
  CHECK(missing == 0);
  auto pending = pined.api("GET", "/v1/approvals").json();
  bool still = false;
  for (auto& p : pending["approvals"])
    if (p["id"] == a["id"]) still = p["state"] == "pending";
  CHECK(still);
}

TEST_CASE("request_access: the owner is asked; the grant holds for that conversation from its next task") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  std::string shared = dir.path() + "/shared";
  writeConfig(home);
  std::string replies = readText(home + "/providers/replies.yaml");
  for (size_t at; (at = replies.find("SHARED")) != std::string::npos;) replies.replace(at, 6, shared);
  writeText(home + "/providers/replies.yaml", replies);
  writeText(shared + "/shared.txt", "shared words\n");
  chmod(shared.c_str(), 0755);  // the worker's uid (when pine runs as root) must be able to read it
  chmod((shared + "/shared.txt").c_str(), 0644);
  Pined pined(home, {}, {});

  // Before any grant the read is refused (by the jail, and by the sandbox behind it).
  message(pined, "main", "read the shared file");
  CHECK(lastToolResult(home, "main").find("shared words") == std::string::npos);

  auto started = message(pined, "main", "I need the shared folder", false);
  auto a = pendingApproval(pined);
  REQUIRE(a.is_object());
  CHECK(a["tool"] == "request_access");
  CHECK(a["args"]["path"] == shared);
  CHECK(a["alwaysOffered"] == false);
  CHECK(pined.api("POST", "/v1/approvals/" + a["id"].get<std::string>() + "/approve", "{}").status == 200);
  REQUIRE(waitUntil([&] {
    auto listed = pined.api("GET", "/v1/tasks").json();
    for (auto& t : listed["tasks"])
      if (t["id"] == started["task"] && t["state"] == "done") return true;
    return false;
  }, 20s));
  auto t = message(pined, "main", "now read the shared file");
  CHECK(t["state"] == "done");
  CHECK(lastToolResult(home, "main").find("shared words") != std::string::npos);
  // Another conversation of the same agent has no such grant.
  auto other = pined.api("POST", "/v1/agents/main/messages", R"({"text": "read the shared file", "session": "side"})");
  CHECK(other.status == 200);
  REQUIRE(waitUntil([&] {
    auto listed = pined.api("GET", "/v1/tasks?agent=main&limit=1").json();
    return !listed["tasks"].empty() && listed["tasks"][0]["session"] == "side" && listed["tasks"][0]["state"] == "done";
  }, 20s));
  CHECK(lastToolResult(home, "main").find("shared words") == std::string::npos);
}

TEST_CASE("an agent's schedule goes into pine.yaml through pined; one under a minute is refused") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  writeText(home + "/agents/main/agent.yaml",
            "description: main\ntools: [read, write, grep, find, ls, bash, send, publish_event, schedules]\n");
  Pined pined(home, {}, {});
  auto t = message(pined, "main", "water the plants daily please");
  CHECK(t["state"] == "done");
  auto yaml = readText(home + "/pine.yaml");
  CHECK(yaml.find("\"name\":\"water\"") != std::string::npos);
  CHECK(yaml.find("spam") == std::string::npos);
  auto listed = pined.api("GET", "/v1/schedules").json();
  bool found = false;
  for (auto& s : listed["schedules"])
    if (s["name"] == "water") {
      found = true;
      CHECK(s["agent"] == "main");
      CHECK(s["next"].is_string());
    }
  CHECK(found);
  bool refused = false;
  for (auto& d : audit(pined, "tool.decision"))
    if (d["tool"] == "schedules" && d["decision"] == "refused") refused = true;
  CHECK(refused);
  CHECK(pined.auditEvents("config.change").size() >= 1);
}

TEST_CASE("a sub-agent works under its conversation's permissions: what it reads taints the conversation") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  Pined pined(home, {}, {});
  auto t = message(pined, "main", "please split the work");
  CHECK(t["state"] == "done");
  CHECK(t["answer"] == "The copy did it.");
  auto listed = pined.api("GET", "/v1/tasks?agent=main").json();
  nlohmann::json sub;
  for (auto& x : listed["tasks"])
    if (x.value("parent", "") == t["id"]) sub = x;
  REQUIRE(sub.is_object());
  CHECK(sub["session"].get<std::string>().rfind("main+sub", 0) == 0);
  CHECK(sub["answer"] == "The note was read.");
  // The sub-agent's read (security.taintTools) marked the conversation it works for.
  bool tainted = false;
  auto agents = pined.api("GET", "/v1/agents").json();
  for (auto& a : agents["agents"])
    if (a["id"] == "main")
      for (auto& s : a["sessions"])
        if (s["session"] == "main") tainted = s["tainted"];
  CHECK(tainted);
}

TEST_CASE("a conversation larger than a run is given keeps working: its oldest messages are left out, and the run is told") {
  // A review sent twelve 1 MB messages to one conversation: from the eighth on every task failed
  // ("the worker ended before answering"), its history too large for one message to the worker.
  // The 9 MB of history is written into the store while pined is stopped (ten runs to make it
  // would take minutes under the sanitizers).
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeConfig(home);
  {
    Pined first(home, {}, {});
    REQUIRE(message(first, "main", "hello", true, "big")["state"] == "done");
    CHECK(WIFEXITED(first.stop()));
  }
  std::string big;
  while (big.size() < 900 * 1024) big += "word ";
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((home + "/data/pine.db").c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "INSERT INTO messages (agent, session, task_id, role, content, time_ms) "
                                 "VALUES ('main', 'big', 't-old', 'user', ?1, 1)", -1, &st, nullptr) == SQLITE_OK);
  for (int i = 0; i < 10; ++i) {
    std::string content = nlohmann::json{{"role", "user"}, {"text", "part " + std::to_string(i) + " " + big}}.dump();
    sqlite3_bind_text(st, 1, content.c_str(), (int)content.size(), SQLITE_TRANSIENT);
    CHECK(sqlite3_step(st) == SQLITE_DONE);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  Pined pined(home, {}, {});
  auto last = message(pined, "main", "hello after all that", true, "big");
  CHECK_MESSAGE(last["state"] == "done", last.dump().substr(0, 400));
  CHECK(contains(pined.stderrText(), "oldest messages of main/big are left out of its history"));
  // The twin: a small conversation is given whole.
  auto small = message(pined, "main", "hello", true, "small");
  CHECK(small["state"] == "done");
  CHECK_FALSE(contains(pined.stderrText(), "main/small are left out"));
}
