// A crash of the broker loses nothing the owner did (issue 12 item 6), with a real
// `kill -9` of pine-broker while the real processes run: mid-run (a step done, one
// running, a task queued behind), mid-approval (the resumed run waits on the same request
// and does the approved action once), mid-tool call (the conversation says the outcome is
// unknown, the call is not silently repeated), and grants, "always" answers and mode
// switches survive a broker crash but not a restart of pined.
#include <doctest/doctest.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

const char* kCrashReplies = R"(replies:
  - match: "count then sleep"
    turns:
      - tool_calls: [{name: bash, arguments: {command: "echo one >> steps.txt"}}]
      - tool_calls: [{name: bash, arguments: {command: "sleep 91; echo two >> steps.txt"}}]
      - text: "Counted."
  - match: "tell the owner something"
    turns:
      - tool_calls: [{name: read, arguments: {path: note.txt}}]
      - tool_calls: [{name: send, arguments: {to: owner, text: "hello from main"}}]
      - text: "Done with the message."
  - match: "sleep for a while"
    turns:
      - tool_calls: [{name: bash, arguments: {command: "sleep 93; echo slept > slept.txt"}}]
      - text: "Slept."
  - match: "write the first file"
    turns:
      - tool_calls: [{name: write, arguments: {path: first.txt, content: one}}]
      - text: "First written."
  - match: "write the second file"
    turns:
      - tool_calls: [{name: write, arguments: {path: second.txt, content: two}}]
      - text: "Second written."
  - match: "write the third file"
    turns:
      - tool_calls: [{name: write, arguments: {path: third.txt, content: three}}]
      - text: "Third written."
  - match: ""
    text: "ok"
)";

// main reads outside content (security.taintTools: read); careful asks before every write (manual).
void writeCrashHome(const std::string& home) {
  writeMinimalConfig(home, {"main", "careful"});
  std::string pine = readText(home + "/pine.yaml");
  pine += "security:\n  taintTools: [read]\n  approvalTimeout: 120\n";
  writeText(home + "/pine.yaml", pine);
  writeText(home + "/providers/replies.yaml", kCrashReplies);
  writeText(home + "/agents/main/agent.yaml", "description: main\ntools: [read, write, ls, bash, send]\n");
  writeText(home + "/agents/careful/agent.yaml", "description: careful\nmode: manual\ntools: [read, write, ls]\n");
  writeText(home + "/agents/main/workspace/note.txt", "a note\n");
}

nlohmann::json taskOf(Pined& p, const std::string& id) {
  auto listed = p.api("GET", "/v1/tasks?limit=1000").json();
  if (listed.is_object() && listed.contains("tasks"))
    for (auto& t : listed["tasks"])
      if (t["id"] == id) return t;
  return nlohmann::json::object();
}

// Every approval of one task, answered or not.
std::vector<nlohmann::json> approvalsOf(Pined& p, const std::string& task) {
  std::vector<nlohmann::json> out;
  auto listed = p.api("GET", "/v1/approvals?all=1").json();
  if (listed.is_object() && listed.contains("approvals"))
    for (auto& a : listed["approvals"])
      if (a["task"] == task) out.push_back(a);
  return out;
}

nlohmann::json pendingOf(Pined& p, const std::string& task) {
  nlohmann::json found;
  waitUntil(
      [&] {
        for (auto& a : approvalsOf(p, task))
          if (a["state"] == "pending") {
            found = a;
            return true;
          }
        return false;
      },
      30s);
  return found;
}

// kill -9 of the broker; returns once a new broker answers.
void crashBroker(Pined& p) {
  pid_t broker = p.rolePid("broker");
  REQUIRE(broker > 0);
  REQUIRE(kill(broker, SIGKILL) == 0);
  REQUIRE_MESSAGE(waitUntil([&] { pid_t b = p.rolePid("broker"); return b > 0 && b != broker; }, 30s),
                  tailOf(p.stderrText(), 3000));
}

// The stored messages of one task (role and content), in order, read-only from the database.
std::vector<std::pair<std::string, std::string>> messagesOf(const std::string& home, const std::string& task) {
  sqlite3* db = nullptr;
  std::vector<std::pair<std::string, std::string>> out;
  if (sqlite3_open_v2((home + "/data/pine.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT role, content FROM messages WHERE task_id = ? ORDER BY seq", -1, &st, nullptr);
    sqlite3_bind_text(st, 1, task.c_str(), -1, SQLITE_TRANSIENT);
    while (sqlite3_step(st) == SQLITE_ROW)
      out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                       reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

size_t countDecisions(Pined& p, const std::string& task, const std::string& tool, const std::string& decision) {
  size_t n = 0;
  for (auto& d : p.auditJson("tool.decision", task)) n += d["tool"] == tool && d["decision"] == decision;
  return n;
}

}  // namespace

TEST_CASE("kill -9 of the broker before it saved its counts: the sources' counts catch up at its next start") {
  // Counts are saved every few seconds, apart from the events' commits: before, a broker killed
  // in between left the status line short for good (a review: 188 shown, 192 committed).
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") +
                                     "sources:\n  - {name: trick, type: webhook, open: true, topic: feed/trick}\n");
  Pined pined(home, {}, {});
  auto countOf = [&](const std::string& name) -> long long {
    auto j = pined.api("GET", "/v1/sources").json();
    if (j.is_object() && j.contains("sources"))
      for (auto& s : j["sources"])
        if (s.value("name", "") == name) return s.value("events", -1LL);
    return -1;
  };
  for (int i = 0; i < 5; ++i) REQUIRE(postHook(home, "trick", "{\"n\": " + std::to_string(i) + "}", {}) == 202);
  crashBroker(pined);  // at once: well within the 5 s between saves
  REQUIRE(waitUntil([&] { return pined.api("GET", "/v1/events?limit=1").status == 200; }, 15s));
  CHECK(countOf("trick") == 5);
  // The twin: counted once, not again at the next start (the saved seq moved with them).
  for (int i = 5; i < 7; ++i) REQUIRE(postHook(home, "trick", "{\"n\": " + std::to_string(i) + "}", {}) == 202);
  crashBroker(pined);
  REQUIRE(waitUntil([&] { return pined.api("GET", "/v1/events?limit=1").status == 200; }, 15s));
  CHECK(countOf("trick") == 7);
}

TEST_CASE("kill -9 of the broker mid-run: the task resumes, a step that ran is not redone, the queue goes on") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeCrashHome(home);
  Pined pined(home, {}, {});
  std::string first = message(pined, "main", "count then sleep", false)["task"];
  REQUIRE(waitUntil([&] { return !processesMentioning("sleep 91").empty(); }, 30s));
  std::string second = message(pined, "main", "and then say something", false)["task"];
  CHECK(taskOf(pined, second)["state"] == "queued");
  CHECK(readText(home + "/agents/main/workspace/steps.txt") == "one\n");

  crashBroker(pined);
  // pined killed the old worker with its shell: the cut-off command is gone.
  CHECK(waitUntil([&] { return processesMentioning("sleep 91").empty(); }, 10s));
  REQUIRE(waitUntil([&] { return taskEnded(taskOf(pined, first)) && taskEnded(taskOf(pined, second)); }, 60s));
  auto t1 = taskOf(pined, first);
  CAPTURE(t1.dump());
  CHECK(t1["state"] == "done");
  CHECK(t1["answer"] == "Counted.");
  CHECK(t1["resumed"] == 1);
  auto t2 = taskOf(pined, second);
  CHECK(t2["state"] == "done");
  CHECK(t2["answer"] == "ok");
  // The step that ran before the crash ran once; the cut-off one was not repeated behind the owner's back.
  CHECK(readText(home + "/agents/main/workspace/steps.txt") == "one\n");
  CHECK(countDecisions(pined, first, "bash", "allowed") == 2);  // both before the crash, none after
  auto results = pined.toolResults(first);
  REQUIRE(results.size() == 2);
  CHECK(contains(results[0], "already ran before pine's broker restarted"));
  CHECK(contains(results[1], "its outcome is unknown"));
  CHECK(pined.auditJson("task.resume", first).size() == 1);
  CHECK(pined.auditJson("task.resume", second).size() == 1);
  // The second task started only after the first had ended: one task per conversation, in order.
  auto start2 = pined.auditJson("task.start", second);
  REQUIRE(start2.size() == 1);
  CHECK(start2[0]["ts"] >= pined.auditJson("task.end", first).at(0)["ts"]);
}

TEST_CASE("kill -9 of the broker mid-approval: the same request is answered, the action is done exactly once") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeCrashHome(home);
  Pined pined(home, {}, {});
  std::string task = message(pined, "main", "tell the owner something", false)["task"];
  auto a = pendingOf(pined, task);
  REQUIRE(a.is_object());
  CHECK(a["tool"] == "send");
  std::string id = a["id"];

  crashBroker(pined);
  // Still listed, still pending, and the resumed run waits on that very request.
  auto listed = pined.api("GET", "/v1/approvals").json();
  REQUIRE(listed["approvals"].size() == 1);
  CHECK(listed["approvals"][0]["id"] == id);
  REQUIRE_MESSAGE(waitUntil([&] { return !pined.auditJson("approval.resume", task).empty(); }, 30s),
                  readText(home + "/data/logs/broker.log"));
  CHECK(taskOf(pined, task)["state"] == "running");
  auto r = pined.api("POST", "/v1/approvals/" + id + "/approve", "{}");
  CHECK(r.status == 200);
  REQUIRE(waitUntil([&] { return taskEnded(taskOf(pined, task)); }, 30s));
  auto t = taskOf(pined, task);
  CAPTURE(t.dump());
  CHECK(t["state"] == "done");
  CHECK(t["answer"] == "Done with the message.");
  CHECK(approvalsOf(pined, task).size() == 1);  // the owner was asked once
  size_t sent = 0;
  for (auto& n : pined.auditJson("owner.notice", task)) sent += n["text"] == "hello from main";
  CHECK(sent == 1);
  // What the resumed run was told is in the conversation.
  bool noted = false;
  for (auto& [role, content] : messagesOf(home, task))
    if (role == "note") noted = contains(content, "waiting for the owner's approval: send");
  CHECK(noted);
  // Answering again: the first word stands.
  CHECK(pined.api("POST", "/v1/approvals/" + id + "/deny", "{}").status == 409);
}

TEST_CASE("kill -9 of the broker mid-tool call: the conversation says the outcome is unknown; no silent repeat") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeCrashHome(home);
  Pined pined(home, {}, {});
  std::string task = message(pined, "main", "sleep for a while", false)["task"];
  REQUIRE(waitUntil([&] { return !processesMentioning("sleep 93").empty(); }, 30s));

  crashBroker(pined);
  REQUIRE(waitUntil([&] { return taskEnded(taskOf(pined, task)); }, 60s));
  auto t = taskOf(pined, task);
  CAPTURE(t.dump());
  CHECK(t["state"] == "done");
  CHECK(t["answer"] == "Slept.");
  CHECK(waitUntil([&] { return processesMentioning("sleep 93").empty(); }, 10s));
  CHECK_FALSE(std::filesystem::exists(home + "/agents/main/workspace/slept.txt"));
  CHECK(countDecisions(pined, task, "bash", "allowed") == 1);  // the one before the crash
  CHECK(countDecisions(pined, task, "bash", "refused") == 1);  // its exact repeat, answered from the journal
  auto messages = messagesOf(home, task);
  bool noted = false, told = false;
  for (auto& [role, content] : messages) {
    if (role == "note") noted = contains(content, "interrupted, outcome unknown: bash") && contains(content, "sleep 93");
    if (role == "tool") told = contains(content, "its outcome is unknown") && contains(content, "Check whether it took effect");
  }
  CHECK(noted);
  CHECK(told);
}

TEST_CASE("grants, 'always' answers and mode switches survive a crash of the broker, not a restart of pined") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeCrashHome(home);
  auto modeOf = [](Pined& p, const std::string& agent) {
    auto agents = p.api("GET", "/v1/agents").json();
    for (auto& a : agents["agents"])
      if (a["id"] == agent) return a["mode"].get<std::string>();
    return std::string();
  };
  {
    Pined pined(home, {}, {});
    std::string task = message(pined, "careful", "write the first file", false)["task"];
    auto a = pendingOf(pined, task);
    REQUIRE(a.is_object());
    CHECK(a["alwaysOffered"] == true);
    CHECK(pined.api("POST", "/v1/approvals/" + a["id"].get<std::string>() + "/approve", "{\"always\": true}").status ==
          200);
    REQUIRE(waitUntil([&] { return taskOf(pined, task)["state"] == "done"; }, 30s));
    CHECK(pined.api("PUT", "/v1/agents/main/mode", "{\"mode\": \"manual\"}").status == 200);
    CHECK(modeOf(pined, "main") == "manual");

    crashBroker(pined);
    // The answer holds: the next write in that conversation is not asked.
    auto t = message(pined, "careful", "write the second file");
    CAPTURE(t.dump());
    CHECK(t["state"] == "done");
    CHECK(t["answer"] == "Second written.");
    CHECK(approvalsOf(pined, t["id"]).empty());
    CHECK(std::filesystem::exists(home + "/agents/careful/workspace/second.txt"));
    CHECK(modeOf(pined, "main") == "manual");
    CHECK(pined.stop() == 0);
  }
  // pined starts afresh: the conversation is asked again, and the mode is the configured one.
  Pined again(home, {}, {});
  CHECK(modeOf(again, "main") == "auto");
  std::string task = message(again, "careful", "write the third file", false)["task"];
  auto a = pendingOf(again, task);
  REQUIRE(a.is_object());
  CHECK(a["tool"] == "write");
  CHECK(again.api("POST", "/v1/approvals/" + a["id"].get<std::string>() + "/approve", "{}").status == 200);
  REQUIRE(waitUntil([&] { return taskOf(again, task)["state"] == "done"; }, 30s));
}

TEST_CASE("pined and its broker both killed with an approval pending: the task ends saying why, the approval is closed") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeCrashHome(home);
  std::string task, id;
  {
    Pined pined(home, {}, {});
    task = message(pined, "main", "tell the owner something", false)["task"].get<std::string>();
    auto a = pendingOf(pined, task);
    REQUIRE(a.is_object());
    id = a["id"];
    // Stop the broker first so that it cannot end its tasks when it loses pined, then kill everything.
    std::vector<pid_t> tree = processesMentioning(home);
    for (pid_t p : tree)
      if (p != pined.pid()) kill(p, SIGSTOP);
    kill(pined.pid(), SIGKILL);
    for (pid_t p : tree) kill(p, SIGKILL);
    pined.stop();  // reaps it
    CHECK(waitUntil([&] { return processesMentioning(home).empty(); }, 10s));
  }
  Pined again(home, {}, {});
  auto t = taskOf(again, task);
  CAPTURE(t.dump());
  CHECK(t["state"] == "failed");
  CHECK(contains(t.value("error", ""), "pine restarted while this task was running; it was not resumed"));
  CHECK(again.api("GET", "/v1/approvals").json()["approvals"].empty());
  auto closed = approvalsOf(again, task);
  REQUIRE(closed.size() == 1);
  CHECK(closed[0]["state"] == "cancelled");
  auto r = again.api("POST", "/v1/approvals/" + id + "/approve", "{}");
  CHECK(r.status == 410);
  CHECK(contains(r.body, "is closed"));
  size_t sent = 0;
  for (auto& n : again.auditJson("owner.notice", task)) sent += n["text"] == "hello from main";
  CHECK(sent == 0);
}
