// Remote MCP servers (`url`) through the real pined, broker and pine-mcp-remote in the egress
// sandbox, against the loopback HTTP server of tests/fixtures/mcp_http_server: a tool call works
// over each transport; a header's secret reaches the server and the connector only, never the
// broker's memory, log or database; hostile servers (broken and huge answers, requests to the
// client, no answer, redirects, another origin, an expired session, a changed tool list, a
// public address over plain http) leave the broker serving with a clear error; `pinectl mcp` lists them.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "tests/fixtures/mcp_http_server.h"
#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace mcp_remote_it {
namespace {

const std::string kToken = "remote-mcp-token-4c7e19a0b35d";

std::vector<std::string> relayWorker() { return {"--worker-program", testBinDir() + "/fixtures/test-worker"}; }

// A home whose agent `agent` has these remote servers (name -> url), with the token in .env.
void remoteHome(const std::string& home, const std::string& agent, const std::map<std::string, std::string>& servers,
                const std::string& extra = "") {
  writeMinimalConfig(home, {agent});
  std::string yaml = "description: remote servers\ntools: [read]\nmcpServers:\n";
  for (auto& [name, url] : servers)
    yaml += "  " + name + ":\n    url: \"" + url + "\"\n    headers: {Authorization: \"Bearer ${secret:MCP_REMOTE_TOKEN}\"}\n" +
            extra;
  writeText(home + "/agents/" + agent + "/agent.yaml", yaml);
  writeText(home + "/.env", "MCP_REMOTE_TOKEN=" + kToken + "\n");
  std::filesystem::permissions(home + "/.env", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

nlohmann::json serverState(Pined& p, const std::string& agent, const std::string& name) {
  auto j = nlohmann::json::parse(p.ctl({"mcp", "--json"}).out, nullptr, false);
  if (!j.is_object()) return nullptr;
  for (auto& s : j["servers"])
    if (s["agent"] == agent && s["server"] == name) return s;
  return nullptr;
}

// The processes that run this build's `program` (its full path is their command line's first word;
// pine-launch's lines name only the role).
std::vector<pid_t> running(const std::string& program) {
  return processesMentioning(std::filesystem::canonical(binDir() + "/" + program).string());
}

}  // namespace
}  // namespace mcp_remote_it

TEST_CASE("remote MCP: tool calls over streamable HTTP (JSON and event streams) and HTTP+SSE; the header's "
          "secret reaches the server, never the broker") {
  using namespace mcp_remote_it;
  McpHttpServer server;
  TempDir dir;
  std::string home = dir.path() + "/home";
  remoteHome(home, "relay-remote", {{"files", server.url("json")}, {"stream", server.url("sse")}, {"old", server.url("legacy")}});
  Pined pined(home, relayWorker(), {});

  auto t = message(pined, "relay-remote",
                   "CALL mcp__files__echo {\"text\": \"over json\"}\n"
                   "CALL mcp__stream__slow {\"ms\": 20}\n"
                   "CALL mcp__old__echo {\"text\": \"the old way\"}\n"
                   "CALL mcp__files__whoami {}\n");
  CAPTURE(t.dump());
  CAPTURE(tailOf(pined.stderrText(), 3000));
  std::string a = t.value("answer", "");
  CHECK(t["state"] == "done");
  CHECK(contains(a, "mcp__files__echo: ok: <<<outside-content"));
  CHECK(contains(a, "over json"));
  CHECK(contains(a, "mcp__stream__slow: ok:"));
  CHECK(contains(a, "done"));
  CHECK(contains(a, "mcp__old__echo: ok:"));
  CHECK(contains(a, "the old way"));
  // The server echoes the header back: the connector redacts it before the broker sees it.
  CHECK(contains(a, "you sent Authorization: [redacted]"));
  CHECK_FALSE(contains(a, kToken));

  // The server got the token from .env in its header, and the session's headers.
  size_t withToken = 0, withSession = 0;
  for (auto& r : server.requests()) {
    withToken += r.headers["authorization"] == "Bearer " + kToken;
    withSession += r.headers.count("mcp-session-id") > 0;
  }
  CHECK(withToken == server.requests().size());
  CHECK(withSession > 0);

  // pinectl mcp lists them as remote and running, with their tools.
  auto s = serverState(pined, "relay-remote", "files");
  CAPTURE(s.dump());
  CHECK(s["kind"] == "remote");
  CHECK(s["state"] == "running");
  CHECK(s["tools"].size() == 4);
  CHECK(contains(pined.ctl({"mcp"}).out, "relay-remote/files (remote, approve never)  running"));

  // The connectors hold the token (so the scan can find it); no broker does, nor any command
  // line or environment.
  auto connectors = running("pine-mcp-remote");
  auto brokers = running("pine-broker");
  REQUIRE(connectors.size() == 3);
  REQUIRE(brokers.size() >= 1);
  size_t scanned = 0;
  CHECK(countInMemory(connectors[0], {kToken}, &scanned)[0] >= 1);
  CHECK(scanned > 0);
  for (pid_t c : connectors) {
    CHECK_FALSE(contains(readText("/proc/" + std::to_string(c) + "/environ"), kToken));
    CHECK(readText("/proc/" + std::to_string(c) + "/cmdline") ==
          std::filesystem::canonical(binDir() + "/pine-mcp-remote").string() + std::string(1, '\0'));
  }
  for (pid_t b : brokers) {
    CAPTURE(b);
    scanned = 0;
    CHECK(countInMemory(b, {kToken}, &scanned)[0] == 0);
    CHECK(scanned > 0);
    CHECK_FALSE(contains(readText("/proc/" + std::to_string(b) + "/environ"), kToken));
  }

  // At the end the connectors go with pined, and DELETE their sessions.
  pined.stop();
  CHECK(waitUntil([&] { return running("pine-mcp-remote").empty(); }, 5s));
  for (auto& e : std::filesystem::recursive_directory_iterator(home + "/data"))  // logs, audit log, database
    if (e.is_regular_file()) CHECK_MESSAGE(!contains(readText(e.path()), kToken), e.path());
  CHECK_FALSE(contains(pined.stderrText(), kToken));
}

TEST_CASE("remote MCP: hostile servers leave the broker serving; each call or start fails with a reason") {
  using namespace mcp_remote_it;
  McpHttpServer server;
  TempDir dir;
  std::string home = dir.path() + "/home";
  remoteHome(home, "relay-hostile",
             {{"garbage", server.url("garbage")}, {"huge", server.url("huge")}, {"asks", server.url("requests")},
              {"moved", server.url("redirect")}, {"foreign", server.url("foreign")},
              {"public", "http://8.8.8.8:9/mcp"}, {"honest", server.url("json")}, {"silent", server.url("silent")}});
  Pined pined(home, relayWorker(), {});

  auto t = message(pined, "relay-hostile",
                   "CALL mcp__garbage__echo {\"text\": \"x\"}\n"
                   "CALL mcp__huge__echo {\"text\": \"x\"}\n"
                   "CALL mcp__asks__echo {\"text\": \"asked back\"}\n"
                   "CALL mcp__moved__echo {\"text\": \"x\"}\n"
                   "CALL mcp__foreign__echo {\"text\": \"x\"}\n"
                   "CALL mcp__public__echo {\"text\": \"x\"}\n"
                   "CALL mcp__honest__echo {\"text\": \"still fine\"}\n");
  CAPTURE(t.dump());
  std::string a = t.value("answer", "");
  // A broken answer and an answer over the cap fail that call, saying why.
  CHECK(contains(a, "mcp__garbage__echo: error: MCP server 'garbage': the call failed:"));
  CHECK(contains(a, "its answer is not JSON"));
  CHECK(contains(a, "mcp__huge__echo: error: MCP server 'huge': the call failed:"));
  CHECK(contains(a, "its answer is over 4 MiB"));
  // The server's request to pine is refused (the refusal is POSTed back); the call is answered.
  CHECK(contains(a, "mcp__asks__echo: ok:"));
  CHECK(contains(a, "asked back"));
  // The refusal and the call's answer travel apart (the answer came on the stream), so the refusal
  // may reach the server just after the task ended.
  bool refusedBack = false;
  for (int i = 0; i < 100 && !refusedBack; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (auto& r : server.requests())
      refusedBack = refusedBack || (contains(r.body, "\"srv-1\"") && contains(r.body, "\"error\""));
  }
  CHECK(refusedBack);
  // A redirect is not followed, another origin is not posted to, a public address is not reached
  // over plain http: those servers never start, and pinectl mcp says why.
  CHECK(contains(a, "mcp__moved__echo: absent"));
  CHECK(contains(a, "mcp__foreign__echo: absent"));
  CHECK(contains(a, "mcp__public__echo: absent"));
  auto moved = serverState(pined, "relay-hostile", "moved");
  CAPTURE(moved.dump());
  CHECK(moved["state"] == "failed");
  CHECK(contains(moved.value("error", ""), "HTTP 307 (a redirect, not followed)"));
  auto foreign = serverState(pined, "relay-hostile", "foreign");
  CAPTURE(foreign.dump());
  CHECK(contains(foreign.value("error", ""), "another origin"));
  auto pub = serverState(pined, "relay-hostile", "public");
  CAPTURE(pub.dump());
  CHECK(contains(pub.value("error", ""), "plain http only to this machine or the local network"));
  // Its legitimate twin beside them: a loopback server over plain http works.
  CHECK(contains(a, "mcp__honest__echo: ok:"));
  CHECK(contains(a, "still fine"));

  // A server that never answers: the owner cancels the task, and the cancellation reaches the server.
  auto seen = [&](const std::string& part) {
    for (auto& r : server.requests())
      if (r.path == "/mcp/silent" && contains(r.body, part)) return true;
    return false;
  };
  auto started = message(pined, "relay-hostile", "CALL mcp__silent__echo {\"text\": \"hello?\"}\n", false);
  REQUIRE(waitUntil([&] { return seen("tools/call"); }, 20s));
  CHECK(pined.api("POST", "/v1/tasks/" + started["task"].get<std::string>() + "/cancel", "{}").status == 200);
  CHECK(waitUntil([&] { return seen("notifications/cancelled"); }, 10s));

  CHECK(pined.api("GET", "/v1/status").status == 200);
  auto again = message(pined, "relay-hostile", "CALL mcp__honest__echo {\"text\": \"again\"}\n");
  CHECK(contains(again.value("answer", ""), "again"));
}

TEST_CASE("remote MCP: a session the server ended is started again; a changed tool is disabled until review") {
  using namespace mcp_remote_it;
  McpHttpServer server;
  TempDir dir;
  std::string home = dir.path() + "/home";
  remoteHome(home, "relay-shift", {{"brief", server.url("expire")}, {"shifty", server.url("changing")}});
  Pined pined(home, relayWorker(), {});

  auto t = message(pined, "relay-shift", "CALL mcp__brief__echo {\"text\": \"first\"}\n");
  CHECK(contains(t.value("answer", ""), "first"));
  // The server forgot the session: the next call hears so, and the server is started again later.
  auto t2 = message(pined, "relay-shift", "CALL mcp__brief__echo {\"text\": \"second\"}\n");
  CAPTURE(t2.dump());
  CHECK(contains(t2.value("answer", ""), "ended the session (HTTP 404)"));
  nlohmann::json s;
  REQUIRE(waitUntil([&] {
    s = serverState(pined, "relay-shift", "brief");
    return s.is_object() && s["state"] == "failed";
  }, 10s));
  std::this_thread::sleep_for(1200ms);  // its first restart waits 1 s
  auto t3 = message(pined, "relay-shift", "CALL mcp__brief__echo {\"text\": \"third\"}\n");
  CHECK(contains(t3.value("answer", ""), "third"));
  CHECK(serverState(pined, "relay-shift", "brief")["starts"] == 2);
  size_t inits = 0;
  for (auto& r : server.requests()) inits += r.path == "/mcp/expire" && contains(r.body, "\"initialize\"");
  CHECK(inits == 2);

  // The tool list changes after the first call: echo is disabled, look is not.
  auto c1 = message(pined, "relay-shift", "CALL mcp__shifty__echo {\"text\": \"before\"}\n");
  CHECK(contains(c1.value("answer", ""), "before"));
  REQUIRE(waitUntil([&] {
    s = serverState(pined, "relay-shift", "shifty");
    return s.is_object() && s.contains("changed") && !s["changed"].empty();
  }, 10s));
  CHECK(s["changed"] == nlohmann::json::array({"echo"}));
  auto c2 = message(pined, "relay-shift", "CALL mcp__shifty__echo {\"text\": \"after\"}\nCALL mcp__shifty__look {}\n");
  CHECK(contains(c2.value("answer", ""), "mcp__shifty__echo: absent"));
  CHECK(contains(c2.value("answer", ""), "mcp__shifty__look: ok:"));
  auto review = pined.ctl({"mcp", "review", "shifty"});
  CHECK(review.exitCode == 0);
  CHECK(contains(review.out, "~/.ssh/id_rsa"));
}
