// Local MCP servers through the real pined and broker (docs/mcp.md), with the stdio server of
// tests/fixtures/mcp_server.cpp: pined starts it with its env (a secret filled in there) in its
// own folder; its tools are rows of the run's tool table (the relay* test worker calls them as
// a model would); results are fenced outside content; taints marks the conversation and
// approve: tainted / always ask, read-only tools never wait; a hostile server (garbage, a 100 MB
// answer, none, requests to the client, a changed tool list) leaves the broker serving and the
// call failed or refused with a reason; a changed tool is disabled until `pinectl mcp review`.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

std::string mcpFixture() { return testBinDir() + "/fixtures/mcp-server"; }

std::vector<std::string> mcpWorker() { return {"--worker-program", testBinDir() + "/fixtures/test-worker"}; }

// A home with these agents (id -> agent.yaml) and a .env.
void mcpHome(const std::string& home, const std::map<std::string, std::string>& agents, const std::string& env = "") {
  std::vector<std::string> ids;
  for (auto& [id, yaml] : agents) ids.push_back(id);
  writeMinimalConfig(home, ids);
  for (auto& [id, yaml] : agents) writeText(home + "/agents/" + id + "/agent.yaml", yaml);
  if (!env.empty()) {
    writeText(home + "/.env", env);
    chmod((home + "/.env").c_str(), 0600);
  }
}

// A server entry of agent.yaml running the fixture in `mode`.
std::string server(const std::string& name, const std::string& mode, const std::string& extra = "",
                   const std::string& log = "") {
  std::string s = "  " + name + ":\n    command: [" + mcpFixture() + ", --mode=" + mode + "]\n";
  if (!log.empty()) s += "    env: {MCP_FIXTURE_LOG: " + log + "}\n";
  return s + extra;
}

nlohmann::json mcpServerState(Pined& p, const std::string& agent, const std::string& name) {
  auto j = nlohmann::json::parse(p.ctl({"mcp", "--json"}).out, nullptr, false);
  if (!j.is_object()) return nullptr;
  for (auto& s : j["servers"])
    if (s["agent"] == agent && s["server"] == name) return s;
  return nullptr;
}

std::string answerOf(const nlohmann::json& t) { return t.value("answer", ""); }

// The task `id` of `agent` once it has ended (null when it did not within 20 s).
nlohmann::json endedTask(Pined& p, const std::string& agent, const std::string& id) {
  nlohmann::json ended;
  waitUntil([&] {
    auto r = p.api("GET", "/v1/tasks?agent=" + agent).json();
    if (!r.is_object() || !r.contains("tasks")) return false;
    for (auto& x : r["tasks"])
      if (x["id"] == id && taskEnded(x)) ended = x;
    return ended.is_object();
  }, 20s);
  return ended;
}

// Sends `text` to `agent` without waiting; the question that comes up must be about `tool`, its
// reason must say `why`; answers it (approve or deny) and returns the ended task (null if none).
// `asked` gets the approval's id.
nlohmann::json answered(Pined& p, const std::string& agent, const std::string& text, const std::string& tool,
                        const std::string& why, const std::string& answer, std::string& asked) {
  auto started = p.api("POST", "/v1/agents/" + agent + "/messages", nlohmann::json{{"text", text}, {"wait", false}}.dump()).json();
  auto ap = pendingApproval(p, asked);
  if (!ap.is_object()) return nullptr;
  CAPTURE(ap.dump());
  CHECK(ap["tool"] == tool);
  CHECK(contains(ap.value("reason", ""), why));
  asked = ap["id"];
  CHECK(p.api("POST", "/v1/approvals/" + asked + "/" + answer, "{}").status == 200);
  return endedTask(p, agent, started.value("task", ""));
}

}  // namespace

TEST_CASE("MCP: pined starts a local server with its env; its tools reach the run; results are fenced outside content") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  std::string log = dir.path() + "/fixture.log";
  mcpHome(home,
          {{"relay-mcp", "description: uses an MCP server\ntools: [read]\nmcpServers:\n" +
                             server("files", "honest", "    env: {MCP_FIXTURE_LOG: " + log +
                                                           ", TOKEN: 'Bearer ${secret:MCP_TOKEN}'}\n")},
           {"relay-none", "description: no MCP server\ntools: [read]\n"}},
          "MCP_TOKEN=tok-5b1c9e77d2a04f18\n");
  Pined pined(home, mcpWorker(), {});

  auto t = message(pined, "relay-mcp",
                   "CALL mcp__files__echo {\"text\": \"hello from the model\"}\n"
                   "CALL mcp__files__inject {}\n"
                   "CALL mcp__files__nothing {}\n");
  CAPTURE(t.dump());
  std::string a = answerOf(t);
  CHECK(t["state"] == "done");
  CHECK(contains(a, "mcp__files__echo: ok: <<<outside-content"));
  CHECK(contains(a, "hello from the model"));
  CHECK(contains(a, "from: the result of mcp__files__echo (MCP server 'files')"));
  // What tries to instruct the model arrives fenced as data, like every result.
  CHECK(contains(a, "mcp__files__inject: ok: <<<outside-content"));
  CHECK(contains(a, "mcp__files__nothing: absent"));
  // The server got the messages the model's call made, and its secret only in its own environment.
  CHECK(contains(readText(log), "\"name\":\"echo\""));
  auto pids = processesMentioning("--mode=honest");
  REQUIRE(pids.size() == 1);
  std::ifstream envFile("/proc/" + std::to_string(pids[0]) + "/environ");
  std::string env((std::istreambuf_iterator<char>(envFile)), std::istreambuf_iterator<char>());
  CHECK(contains(env, "TOKEN=Bearer tok-5b1c9e77d2a04f18"));
  CHECK(contains(env, "HOME=" + home + "/mcp-data/relay-mcp/files"));
  CHECK_FALSE(contains(env, "PINE_"));
  CHECK(std::filesystem::is_directory(home + "/mcp-data/relay-mcp/files"));
  // The secret never reaches the broker's database (the tool results are stored there).
  for (auto& r : toolResults(home, t["id"])) CHECK_FALSE(contains(r, "tok-5b1c9e77d2a04f18"));

  // An agent without the server gets none of its tools.
  auto none = message(pined, "relay-none", "CALL mcp__files__echo {\"text\": \"x\"}\n");
  CHECK(contains(answerOf(none), "mcp__files__echo: absent"));

  // pinectl mcp: the server, running, with its four tools (look is read-only).
  auto s = mcpServerState(pined, "relay-mcp", "files");
  CAPTURE(s.dump());
  REQUIRE(s.is_object());
  CHECK(s["state"] == "running");
  REQUIRE(s["tools"].size() == 4);
  for (auto& tool : s["tools"]) {
    CHECK(tool["disabled"] == false);
    CHECK(tool["readOnly"] == (tool["name"] == "look"));
  }
  auto text = pined.ctl({"mcp"});
  CHECK(contains(text.out, "relay-mcp/files (local, approve never)  running"));
  CHECK(contains(text.out, "mcp__files__look  read-only"));

  // It goes with pined.
  pined.stop();
  CHECK(waitUntil([&] { return processesMentioning("--mode=honest").empty(); }, 5s));
}

TEST_CASE("MCP: taints marks the conversation; approve: tainted asks once tainted, read-only tools never wait; "
          "approve: always asks") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  mcpHome(home, {{"relay-taint", "description: t\ntools: [read]\nmcpServers:\n" +
                                     server("web", "honest", "    taints: true\n    approve: tainted\n")},
                 {"relay-always", "description: a\ntools: [read]\nmcpServers:\n" +
                                      server("cal", "honest", "    approve: always\n")}});
  Pined pined(home, mcpWorker(), {});

  // A clean conversation: allowed, and the call marks it tainted.
  auto t = message(pined, "relay-taint", "CALL mcp__web__echo {\"text\": \"one\"}\n");
  CAPTURE(t.dump());
  CHECK(contains(answerOf(t), "mcp__web__echo: ok:"));
  CHECK(sessionTainted(pined, "relay-taint", "main"));
  // Tainted now: the read-only tool goes ahead without asking, echo waits for the owner, who says no.
  std::string asked;
  auto ended = answered(pined, "relay-taint", "CALL mcp__web__look {}\nCALL mcp__web__echo {\"text\": \"two\"}\n",
                        "mcp__web__echo", "approve: tainted", "deny", asked);
  REQUIRE(ended.is_object());
  CAPTURE(ended.dump());
  CHECK(contains(answerOf(ended), "mcp__web__look: ok:"));
  CHECK(contains(answerOf(ended), "mcp__web__echo: error: not approved: the owner denied"));
  size_t questions = 0;
  for (auto& d : audit(pined, "tool.decision"))
    if (d["decision"] == "asked") questions += d["tool"] == "mcp__web__look" ? 100 : 1;
  CHECK(questions == 1);

  // approve: always: even a clean conversation asks; approved, it runs.
  auto ended2 = answered(pined, "relay-always", "CALL mcp__cal__echo {\"text\": \"three\"}\n", "mcp__cal__echo",
                         "approve: always", "approve", asked);
  REQUIRE(ended2.is_object());
  CHECK(contains(answerOf(ended2), "mcp__cal__echo: ok:"));
  CHECK(contains(answerOf(ended2), "three"));
  CHECK_FALSE(sessionTainted(pined, "relay-always", "main"));
}

TEST_CASE("MCP: hostile servers leave the broker serving; each call fails or is refused with a reason") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  std::string log = dir.path() + "/silent.log";
  mcpHome(home, {{"relay-hostile", "description: h\ntools: [read]\nmcpServers:\n" + server("garbage", "garbage") +
                                       server("huge", "huge") + server("asks", "requests") +
                                       server("old", "version=1999-01-01") + server("silent", "silent", "", log)}});
  Pined pined(home, mcpWorker(), {});

  auto t = message(pined, "relay-hostile",
                   "CALL mcp__garbage__echo {\"text\": \"still fine\"}\n"
                   "CALL mcp__huge__echo {\"text\": \"x\"}\n"
                   "CALL mcp__asks__echo {\"text\": \"asked back\"}\n"
                   "CALL mcp__old__echo {\"text\": \"x\"}\n");
  CAPTURE(t.dump());
  std::string a = answerOf(t);
  // Lines that are not JSON-RPC are skipped: the answer after them arrives.
  CHECK(contains(a, "mcp__garbage__echo: ok:"));
  CHECK(contains(a, "still fine"));
  // A 100 MB line ends that session, not the broker; the model hears why.
  CHECK(contains(a, "mcp__huge__echo: error: MCP server 'huge': the call failed:"));
  // Requests sent back to pine are refused; the call itself is answered.
  CHECK(contains(a, "mcp__asks__echo: ok:"));
  CHECK(contains(a, "asked back"));
  // A server speaking a protocol version pine does not know never starts: its tools never appear.
  CHECK(contains(a, "mcp__old__echo: absent"));
  auto old = mcpServerState(pined, "relay-hostile", "old");
  CAPTURE(old.dump());
  CHECK(old["state"] == "failed");
  CHECK(contains(old.value("error", ""), "1999-01-01"));
  auto huge = mcpServerState(pined, "relay-hostile", "huge");
  CHECK(huge["state"] == "failed");

  // A server that never answers: the owner cancels the task, and the call is cancelled at the server.
  auto started = message(pined, "relay-hostile", "CALL mcp__silent__echo {\"text\": \"hello?\"}\n", false);
  REQUIRE(waitUntil([&] { return contains(readText(log), "tools/call"); }, 20s));
  CHECK(pined.api("POST", "/v1/tasks/" + started["task"].get<std::string>() + "/cancel", "{}").status == 200);
  CHECK(waitUntil([&] { return contains(readText(log), "notifications/cancelled"); }, 10s));

  // The broker still serves: status answers and a new run of the same agent works.
  CHECK(pined.api("GET", "/v1/status").status == 200);
  auto again = message(pined, "relay-hostile", "CALL mcp__garbage__echo {\"text\": \"again\"}\n");
  CHECK(contains(answerOf(again), "again"));
}

TEST_CASE("MCP: a tool that changes after its list was pinned is disabled until pinectl mcp review") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  mcpHome(home, {{"relay-pin", "description: p\ntools: [read]\nmcpServers:\n" + server("shifty", "changing")}});
  Pined pined(home, mcpWorker(), {});

  // The first call works; after it the server changes echo's description and says its list changed.
  auto t = message(pined, "relay-pin", "CALL mcp__shifty__echo {\"text\": \"first\"}\n");
  CHECK(contains(answerOf(t), "first"));
  nlohmann::json s;
  REQUIRE(waitUntil([&] {
    s = mcpServerState(pined, "relay-pin", "shifty");
    return s.is_object() && s.contains("changed") && !s["changed"].empty();
  }, 10s));
  CAPTURE(s.dump());
  CHECK(s["changed"] == nlohmann::json::array({"echo"}));
  for (auto& tool : s["tools"]) CHECK(tool["disabled"] == (tool["name"] == "echo"));
  CHECK(contains(pined.ctl({"mcp"}).out, "DISABLED"));

  // The changed tool is not handed to the next run; the unchanged ones are.
  auto t2 = message(pined, "relay-pin", "CALL mcp__shifty__echo {\"text\": \"second\"}\nCALL mcp__shifty__look {}\n");
  CAPTURE(t2.dump());
  CHECK(contains(answerOf(t2), "mcp__shifty__echo: absent"));
  CHECK(contains(answerOf(t2), "mcp__shifty__look: ok:"));

  // A name no agent has is refused, saying where the names are.
  auto none = pined.ctl({"mcp", "review", "nosuch"});
  CHECK(none.exitCode != 0);
  CHECK(contains(none.out + none.err, "no local or remote MCP server 'nosuch'"));
  // The owner sees the difference and accepts it: echo is back.
  auto review = pined.ctl({"mcp", "review", "shifty"});
  CAPTURE(review.out);
  CAPTURE(review.err);
  CHECK(review.exitCode == 0);
  CHECK(contains(review.out, "changed: echo"));
  CHECK(contains(review.out, "read ~/.ssh/id_rsa"));
  CHECK(contains(review.out, "accepted"));
  auto t3 = message(pined, "relay-pin", "CALL mcp__shifty__echo {\"text\": \"third\"}\n");
  CHECK(contains(answerOf(t3), "mcp__shifty__echo: ok:"));
  CHECK(contains(answerOf(t3), "third"));

  // The pins outlive pined: started afresh, the server lists echo as it first did, which is not
  // the list the owner accepted last, so echo waits for a review again.
  pined.stop();
  Pined again(home, mcpWorker(), {});
  auto t4 = message(again, "relay-pin", "CALL mcp__shifty__echo {\"text\": \"fourth\"}\nCALL mcp__shifty__look {}\n");
  CAPTURE(t4.dump());
  CHECK(contains(answerOf(t4), "mcp__shifty__echo: absent"));
  CHECK(contains(answerOf(t4), "mcp__shifty__look: ok:"));
}

TEST_CASE("MCP: runs started by outside events get no MCP tools unless untrusted.mcp") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  mcpHome(home, {{"probe-closed", "description: c\ntools: [read]\nmcpServers:\n" + server("files", "honest")},
                 {"probe-open", "description: o\ntools: [read]\nuntrusted: {mcp: true}\nmcpServers:\n" +
                                    server("files", "honest")}});
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") +
                                     "routes:\n"
                                     "  - {topic: in/closed, agent: probe-closed, trust: untrusted}\n"
                                     "  - {topic: in/open, agent: probe-open, trust: untrusted}\n");
  Pined pined(home, mcpWorker(), {});
  // The probe worker reports the broker-side tools it was handed (brokerTools=a,b,).
  auto brokerTools = [&](const std::string& agent, const std::string& topic) {
    auto r = pined.api("POST", "/v1/events", nlohmann::json{{"topic", topic}, {"payload", 1}}.dump());
    CHECK_MESSAGE(r.status == 200, r.body);
    nlohmann::json found;
    waitUntil([&] {
      auto j = pined.api("GET", "/v1/tasks?agent=" + agent).json();
      for (auto& t : j["tasks"])
        if (taskEnded(t)) found = t;
      return found.is_object();
    }, 20s);
    CAPTURE(found.dump());
    CHECK(found["trust"] == "untrusted");
    std::string a = found.value("answer", "");
    size_t at = a.find("brokerTools=");
    return at == std::string::npos ? std::string("(none reported)") : a.substr(at, a.find('\n', at) - at);
  };
  std::string closed = brokerTools("probe-closed", "in/closed");
  CHECK_FALSE(contains(closed, "mcp__"));
  CHECK(contains(closed, "brokerTools="));
  std::string open = brokerTools("probe-open", "in/open");
  CHECK(contains(open, "mcp__files__echo"));
  // The owner's own run of the closed agent has them.
  auto owner = message(pined, "probe-closed", "hello");
  CHECK(contains(owner.value("answer", ""), "mcp__files__echo"));
}

TEST_CASE("MCP: a server that dies is started again at the next need; readOnly: true and approve patterns") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  mcpHome(home, {{"relay-ro", "description: r\ntools: [read]\napprove: [mcp__ro__look]\nmcpServers:\n" +
                                  server("ro", "honest", "    taints: true\n    approve: tainted\n    readOnly: true\n")}});
  Pined pined(home, mcpWorker(), {});

  // readOnly: true: even echo goes ahead in a tainted conversation...
  auto t = message(pined, "relay-ro", "CALL mcp__ro__echo {\"text\": \"one\"}\nCALL mcp__ro__echo {\"text\": \"two\"}\n");
  CAPTURE(t.dump());
  CHECK(contains(answerOf(t), "two"));
  CHECK(sessionTainted(pined, "relay-ro", "main"));
  // ...but a tool an approve pattern names waits, read-only or not.
  std::string asked;
  auto ended = answered(pined, "relay-ro", "CALL mcp__ro__look {}\n", "mcp__ro__look", "approve lists", "approve", asked);
  REQUIRE(ended.is_object());
  CHECK(contains(answerOf(ended), "mcp__ro__look: ok:"));

  // The server dies: pinectl mcp says so, and the next run starts it again.
  auto pids = processesMentioning("--mode=honest");
  REQUIRE(pids.size() == 1);
  kill(pids[0], SIGKILL);
  nlohmann::json s;
  REQUIRE(waitUntil([&] {
    s = mcpServerState(pined, "relay-ro", "ro");
    return s.is_object() && s["state"] == "failed";
  }, 10s));
  CAPTURE(s.dump());
  CHECK(contains(s.value("error", ""), "killed by signal 9"));
  std::this_thread::sleep_for(1200ms);  // its first restart waits 1 s
  auto again = message(pined, "relay-ro", "CALL mcp__ro__echo {\"text\": \"back\"}\n");
  CHECK(contains(answerOf(again), "back"));
  s = mcpServerState(pined, "relay-ro", "ro");
  CHECK(s["state"] == "running");
  CHECK(s["starts"] == 2);
}

TEST_CASE("MCP: the real worker's model calls a server's tool and reads its result as outside content") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  mcpHome(home, {{"main", "description: main\ntools: [read]\nmcpServers:\n" + server("files", "honest")}});
  writeText(home + "/providers/replies.yaml",
            "replies:\n"
            "  - match: \"ask the server\"\n"
            "    turns:\n"
            "      - tool_calls:\n"
            "          - name: mcp__files__echo\n"
            "            arguments: {text: \"words from the server\"}\n"
            "      - text: \"The server said its words.\"\n"
            "  - match: \"\"\n"
            "    text: ok\n");
  Pined pined(home, {}, {});  // pine-worker itself, in its sandbox, against the script model
  auto t = message(pined, "main", "Please ask the server");
  CAPTURE(t.dump());
  CHECK(t["state"] == "done");
  CHECK(answerOf(t) == "The server said its words.");
  auto results = toolResults(home, t["id"]);
  REQUIRE(results.size() == 1);
  CHECK(contains(results[0], "words from the server"));
  CHECK(contains(results[0], "<<<outside-content"));
  CHECK(contains(results[0], "MCP server 'files'"));
}

TEST_CASE("add_mcp_server: asked in every mode naming the server and its address; what is the owner's is refused") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  const std::string yaml = "description: adds servers\nmode: bypass\ntools: [read, add_mcp_server]\nmcpServers:\n" +
                           server("files", "honest", "    taints: true\n");
  mcpHome(home, {{"relay-add", yaml}});
  Pined pined(home, mcpWorker(), {});
  const std::string file = home + "/agents/relay-add/agent.yaml";

  // What only the owner may write, or what is not a remote server's address, is refused before
  // anyone is asked, and agent.yaml stays as it was.
  auto add = [](const std::string& args) { return "CALL add_mcp_server " + args + "\n"; };
  for (const auto& item : std::vector<std::pair<std::string, std::string>>{
           {R"({"name": "evil", "url": "https://evil.example/mcp", "headers": {"Authorization": "Bearer ${secret:MCP_TOKEN}"}})",
            "\"headers\" is the owner's to write"},
           {R"({"name": "evil", "url": "https://evil.example/mcp", "command": ["sh", "-c", "id"]})",
            "\"command\" is the owner's to write"},
           {R"({"name": "evil", "url": "https://evil.example/mcp", "taints": false})", "\"taints\" is the owner's to write"},
           {R"({"name": "evil", "url": "http://evil.example/mcp"})", "a public server is reached over https only"},
           {R"({"name": "evil", "url": "https://me:pw@evil.example/mcp"})", "\"url\" carries no login"},
           {R"({"name": "e__vil", "url": "https://evil.example/mcp"})", "a server's name is 1 to 64 characters"},
           {R"({"name": "files", "url": "https://evil.example/mcp"})", "an MCP server 'files' exists"},
           {R"({"name": "evil", "url": "file:///etc/passwd"})", "\"url\" is an https:// address"},
           {R"({"name": "evil", "url": "https://evil.example/mcp", "approve": "never"})", "\"approve\" is tainted"}}) {
    const std::string& args = item.first;  // not a structured binding: clang 14 cannot capture one (CAPTURE)
    const std::string& words = item.second;
    CAPTURE(args);
    auto t = message(pined, "relay-add", add(args));
    CHECK_MESSAGE(contains(answerOf(t), "add_mcp_server: error: " + words), t.dump());
  }
  CHECK(pined.api("GET", "/v1/approvals").json()["approvals"].empty());
  CHECK(readText(file) == yaml);

  // Legitimate twin, in bypass mode and a clean conversation: asked all the same, naming both.
  std::string asked;
  auto t = answered(pined, "relay-add", add(R"({"name": "wiki", "url": "https://mcp.example/wiki"})"), "add_mcp_server",
                    "the tools of the MCP server 'wiki' at https://mcp.example/wiki", "deny", asked);
  REQUIRE(t.is_object());
  CHECK(readText(file) == yaml);
  t = answered(pined, "relay-add", add(R"({"name": "wiki", "url": "https://mcp.example/wiki"})"), "add_mcp_server",
               "'wiki' at https://mcp.example/wiki", "approve", asked);
  REQUIRE(t.is_object());
  CHECK_MESSAGE(contains(answerOf(t), "add_mcp_server: ok: MCP server 'wiki' added"), t.dump());
  // Written by pined into the block the owner wrote, the owner's lines kept, always tainting.
  std::string now = readText(file);
  CHECK(now.rfind(yaml, 0) == 0);
  CHECK(contains(now, R"(  wiki: {"url":"https://mcp.example/wiki","taints":true,"approve":"tainted"})"));
  auto state = mcpServerState(pined, "relay-add", "wiki");
  REQUIRE(state.is_object());
  CHECK(state["kind"] == "remote");
  CHECK(state["taints"] == true);
  auto checked = pined.ctl({"check"});
  CHECK_MESSAGE(checked.exitCode != 2, checked.out << checked.err);  // notes (this test home's modes), no error
  CHECK(pined.auditEvents("mcp.add").size() == 1);

  // Once the conversation has read outside content, the question says so.
  t = answered(pined, "relay-add",
               "CALL mcp__files__echo {\"text\": \"hi\"}\n" + add(R"({"name": "docs", "url": "http://192.168.7.7:8080/mcp"})"),
               "add_mcp_server", "note: the conversation has read outside content", "deny", asked);
  REQUIRE(t.is_object());
  CHECK(!contains(readText(file), "docs"));
}

TEST_CASE("MCP: timeoutSec limits a call, a cancelled task cancels its call, progress reaches the owner, idleSec stops a server") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  const std::string quickLog = dir.path() + "/quick.log", longLog = dir.path() + "/long.log";
  mcpHome(home, {{"relay-clock", "description: slow tools\ntools: [read]\nmcpServers:\n" +
                                     server("quick", "honest", "    timeoutSec: 1\n    idleSec: 2\n", quickLog) +
                                     server("long", "honest", "", longLog)}});
  Pined pined(home, mcpWorker(), {});

  // Within its time limit a call goes through, and the server's progress reaches the owner's screen.
  auto sent = pined.ctl({"send", "relay-clock", "CALL mcp__quick__slow {\"ms\": 300}"});
  CAPTURE(sent.out);
  CAPTURE(sent.err);
  CHECK(sent.exitCode == 0);
  CHECK(contains(sent.err, "mcp__quick__slow: halfway"));
  CHECK(contains(sent.out, "mcp__quick__slow: ok"));

  // Past timeoutSec the call fails saying so, and the server is told to stop working on it.
  auto t = message(pined, "relay-clock", "CALL mcp__quick__slow {\"ms\": 2500}\n");
  CAPTURE(t.dump());
  CHECK(contains(answerOf(t), "the server did not answer tools/call within 1 s"));
  CHECK(waitUntil([&] { return contains(readText(quickLog), "no answer within the time limit"); }, 10s));

  // idleSec: no run used it for 2 s, so it is stopped; the next call starts it again.
  CHECK(waitUntil([&] { return mcpServerState(pined, "relay-clock", "quick").value("state", "") == "stopped"; }, 10s));
  CHECK(pined.auditEvents("mcp.stopped").size() >= 1);
  t = message(pined, "relay-clock", "CALL mcp__quick__echo {\"text\": \"again\"}\n");
  CHECK_MESSAGE(contains(answerOf(t), "again"), t.dump());
  CHECK(mcpServerState(pined, "relay-clock", "quick").value("starts", 0) == 2);
  // The server without idleSec (10 minutes by default) was used as long ago and still runs.
  message(pined, "relay-clock", "CALL mcp__long__echo {\"text\": \"x\"}\n");
  std::this_thread::sleep_for(3s);
  CHECK(mcpServerState(pined, "relay-clock", "long").value("state", "") == "running");

  // The owner cancels a task while its call runs: the server hears notifications/cancelled.
  auto started = pined.api("POST", "/v1/agents/relay-clock/messages",
                           nlohmann::json{{"text", "CALL mcp__long__slow {\"ms\": 3000}\n"}, {"wait", false}}.dump()).json();
  const std::string task = started.value("task", "");
  REQUIRE(waitUntil([&] { return contains(readText(longLog), "\"ms\":3000"); }, 10s));
  CHECK(pined.api("POST", "/v1/tasks/" + task + "/cancel", "{}").status == 200);
  CHECK(waitUntil([&] { return contains(readText(longLog), "cancelled by pine"); }, 10s));
}

TEST_CASE("bundled commands: the owner's commands as tools, in the agent's sandbox like its shell; words stay words") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  mcpHome(home,
          {{"relay-cmds",
            "description: commands\ntools: [read]\nmcpServers:\n  tools:\n    bundled: commands\n    commands:\n"
            "      greet: {description: says hello, command: [echo, 'hello {name}'], readOnly: true,\n"
            "              args: {name: {description: who, pattern: '[a-z ]+'}}}\n"
            "      say: {description: prints its words, command: [printf, '%s|', '{text}'], args: {text: {description: any text}}}\n"
            "      show: {description: prints a file, command: [cat, '{path}'], args: {path: {description: a path}}}\n"
            "      nap: {description: sleeps, command: [sleep, '{s}'], timeoutSec: 1, args: {s: {description: seconds, pattern: '[0-9]+'}}}\n"
            "      fail: {description: fails, command: [sh, -c, 'echo oops >&2; exit 3']}\n"}},
          "SECRET_X=sv-7d1e0c55a9b34f21\n");
  writeText(home + "/agents/relay-cmds/workspace/notes.txt", "the notes of relay-cmds\n");
  Pined pined(home, mcpWorker(), {});

  auto call = [&](const std::string& tool, const std::string& args) {
    auto t = message(pined, "relay-cmds", "CALL mcp__tools__" + tool + " " + args + "\n");
    return answerOf(t);
  };
  std::string a = call("greet", R"({"name": "world"})");
  CAPTURE(a);
  CHECK(contains(a, "mcp__tools__greet: ok:"));
  CHECK(contains(a, "exit code 0\nhello world"));
  // No shell reads an argument: what would be a substitution, a pipe or a redirection is printed as it is.
  a = call("say", R"({"text": "$(id); `id` | tee x > y"})");
  CHECK_MESSAGE(contains(a, "$(id); `id` | tee x > y|"), a);
  CHECK(access((home + "/agents/relay-cmds/workspace/y").c_str(), F_OK) != 0);
  // Arguments outside the owner's rules are refused before anything runs.
  a = call("say", R"({"text": "--help"})");
  CHECK_MESSAGE(contains(a, "mcp__tools__say: error: 'tools': not run: \"text\" may not start with '-'"), a);
  a = call("greet", R"({"name": "x; id"})");
  CHECK_MESSAGE(contains(a, "\"name\" must match [a-z ]+"), a);
  a = call("greet", R"({"name": "ann", "path": "/etc"})");
  CHECK_MESSAGE(contains(a, "takes no argument \"path\""), a);
  // The agent's sandbox: its workspace is there, pine's home and its .env are not.
  a = call("show", R"({"path": "notes.txt"})");
  CHECK_MESSAGE(contains(a, "the notes of relay-cmds"), a);
  a = call("show", nlohmann::json{{"path", home + "/.env"}}.dump());
  CHECK_MESSAGE(contains(a, "mcp__tools__show: error:"), a);
  CHECK_MESSAGE(contains(a, "exit code 1"), a);
  CHECK(!contains(a, "sv-7d1e0c55a9b34f21"));
  // Its time limit, its exit status and the end of its stderr.
  a = call("nap", R"({"s": "30"})");
  CHECK_MESSAGE(contains(a, "killed after its time limit of 1 s"), a);
  CHECK(processesMentioning("sleep 30").empty());
  a = call("fail", "{}");
  CHECK_MESSAGE(contains(a, "mcp__tools__fail: error:"), a);
  CHECK_MESSAGE(contains(a, "exit code 3"), a);
  // The end of its stderr (a sanitizer build's launcher may write there first).
  CHECK_MESSAGE(contains(a, "[the end of its stderr]\n"), a);
  CHECK_MESSAGE(contains(a, "oops\n<<<end-outside-content"), a);

  auto state = mcpServerState(pined, "relay-cmds", "tools");
  REQUIRE(state.is_object());
  CHECK(state["state"] == "ready");
  CHECK(state["tools"].size() == 5);
  CHECK(pined.auditEvents("process.start").size() >= 6);
}

TEST_CASE("bundled commands: pined checks again what a broker asks, and runs at most 4 of an agent's at once") {
  // A broker is not trusted to have applied the rules: a stand-in asks pined directly.
  TempDir dir;
  std::string home = dir.path() + "/home";
  mcpHome(home, {{"relay-cmds",
                  "description: commands\ntools: [read]\nmcpServers:\n"
                  "  tools:\n    bundled: commands\n    commands:\n"
                  "      nap: {description: sleeps, command: [sleep, '{s}'], args: {s: {description: seconds, pattern: '[0-9]+'}}}\n"
                  "      pick: {description: one of two, command: [echo, '{w}'], args: {w: {description: which, oneOf: [a, b]}}}\n"
                  "  local:\n    command: [" + mcpFixture() + ", --mode=honest]\n"}});
  Pined pined(home, {"--broker-program", testBinDir() + "/fixtures/test-broker"}, {}, false);
  auto ask = [&](const nlohmann::json& calls) {
    const std::string result = home + "/data/command-result.json";
    unlink(result.c_str());
    writeText(home + "/data/egress-trigger.json.tmp", nlohmann::json{{"kind", "agentCommand"}, {"calls", calls}}.dump());
    std::filesystem::rename(home + "/data/egress-trigger.json.tmp", home + "/data/egress-trigger.json");
    REQUIRE_MESSAGE(waitUntil([&] { return access(result.c_str(), F_OK) == 0; }, 30s), tailOf(pined.stderrText(), 2000));
    return nlohmann::json::parse(readText(result));
  };
  auto nap = [](const std::string& s) {
    return nlohmann::json{{"agent", "relay-cmds"}, {"server", "tools"}, {"command", "nap"}, {"args", {{"s", s}}}};
  };

  // Four at once run; the fifth is refused while they do.
  auto r = ask(nlohmann::json::array({nap("4243"), nap("4243"), nap("4243"), nap("4243"), nap("4243")}));
  INFO(r.dump());
  REQUIRE(r.size() == 5);
  for (int i = 0; i < 4; ++i) CHECK(r[i].is_number());
  CHECK(contains(r[4].get<std::string>(), "agent 'relay-cmds' already runs 4 commands; wait for one"));
  // Dropped by the broker: killed, and once pined has reaped them their places are free again.
  CHECK(waitUntil([&] { return processesMentioning("sleep 4243").empty(); }, 10s));
  CHECK(waitUntil([&] { return ask(nlohmann::json::array({nap("4245")}))[0].is_number(); }, 10s));

  // What the broker's gate would have refused, pined refuses too; the legitimate call beside them runs.
  auto with = [](nlohmann::json c, const char* key, nlohmann::json value) {
    c[key] = std::move(value);
    return c;
  };
  nlohmann::json raw = nap("1");
  raw.erase("args");
  raw["rawArgs"] = "[\"1\"]";
  r = ask(nlohmann::json::array({
      nap("4244"),                                              // 0: runs
      nap("1; id"),                                             // 1: outside its pattern
      with(nap("1"), "args", {{"s", "1"}, {"x", "2"}}),         // 2: an argument it does not take
      with(nap("1"), "args", nlohmann::json::object()),         // 3: a missing argument
      raw,                                                      // 4: not an object
      with(with(nap("1"), "command", "pick"), "args", {{"w", "c"}}),  // 5: not one of its values
      with(nap("1"), "command", "nosuch"),                      // 6: no such command
      with(nap("1"), "server", "local"),                        // 7: a server that is no `bundled: commands`
      with(nap("1"), "agent", "main"),                          // 8: another agent has no such server
      with(nap("1"), "command", "../nap"),                      // 9: not a name
  }));
  INFO(r.dump());
  REQUIRE(r.size() == 10);
  CHECK(r[0].is_number());
  for (int i = 1; i < 10; ++i) CHECK(r[i].is_string());
  CHECK(contains(r[1].get<std::string>(), "the arguments are not allowed: \"s\" must match [0-9]+"));
  CHECK(contains(r[2].get<std::string>(), "'nap' takes no argument \"x\""));
  CHECK(contains(r[3].get<std::string>(), "\"s\" (a string) is required"));
  CHECK(contains(r[4].get<std::string>(), "the arguments are an object"));
  CHECK(contains(r[5].get<std::string>(), "\"w\" is one of: a, b"));
  CHECK(contains(r[6].get<std::string>(), "server 'tools' has no command 'nosuch'"));
  CHECK(contains(r[7].get<std::string>(), "has no 'bundled: commands' server 'local'"));
  CHECK(contains(r[8].get<std::string>(), "agent 'main' has no 'bundled: commands' server 'tools'"));
  CHECK(contains(r[9].get<std::string>(), "bad agent, server or command name"));
  // Nothing refused ran: the one sleep is the legitimate call's, and it is gone with its broker's drop.
  CHECK(processesMentioning("sleep 1").empty());
  CHECK(waitUntil([&] { return processesMentioning("sleep 4244").empty(); }, 10s));
  // Each command that ran, dropped or not, was reaped and audited: 4 + at least 1 + 1.
  auto commandExits = [&] {
    size_t n = 0;
    for (auto& e : pined.auditEvents("process.exit")) n += nlohmann::json::parse(e).value("process", "") == "command";
    return n;
  };
  CHECK_MESSAGE(waitUntil([&] { return commandExits() >= 6; }, 10s), commandExits());
}

TEST_CASE("MCP: a server whose entry changed is started again with the new one at its next use; a rule change is not") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  auto agentYaml = [&](const std::string& mark, const std::string& extra) {
    return "description: uses an MCP server\ntools: [read]\nmcpServers:\n" +
           server("files", "honest", "    env: {MARK: " + mark + "}\n" + extra);
  };
  mcpHome(home, {{"relay-mcp", agentYaml("one", "")}});
  Pined pined(home, mcpWorker(), {});
  auto serverPid = [&] {
    std::vector<pid_t> pids;
    REQUIRE(waitUntil([&] { return (pids = processesMentioning("--mode=honest")).size() == 1; }, 10s));
    return pids[0];
  };
  auto markOf = [](pid_t pid) {
    std::string env = readText("/proc/" + std::to_string(pid) + "/environ");
    for (auto& v : {"MARK=one", "MARK=two"})
      if (contains(env, std::string(v) + '\0')) return std::string(v);
    return std::string("none");
  };
  auto echo = [&](const std::string& text) {
    return answerOf(message(pined, "relay-mcp", "CALL mcp__files__echo {\"text\": \"" + text + "\"}\n"));
  };
  REQUIRE(contains(echo("first"), "mcp__files__echo: ok:"));
  pid_t first = serverPid();
  CHECK(markOf(first) == "MARK=one");

  // A rule of the broker's (the call's time limit) changes: the same process serves.
  writeText(home + "/agents/relay-mcp/agent.yaml", agentYaml("one", "    timeoutSec: 100\n"));
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  REQUIRE(contains(echo("second"), "mcp__files__echo: ok:"));
  CHECK(serverPid() == first);

  // Its environment changes: the old process goes, a new one starts from the new entry.
  writeText(home + "/agents/relay-mcp/agent.yaml", agentYaml("two", "    timeoutSec: 100\n"));
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  std::string a = echo("third");
  CHECK_MESSAGE(contains(a, "mcp__files__echo: ok:"), a);
  CHECK(contains(a, "third"));
  CHECK(waitUntil([&] { return kill(first, 0) != 0; }, 10s));
  pid_t second = serverPid();
  CHECK(second != first);
  CHECK(markOf(second) == "MARK=two");
  bool audited = false;
  for (auto& e : pined.auditEvents("mcp.stopped")) audited = audited || contains(e, "its entry changed");
  CHECK(audited);
}
