// The bundled web MCP server through the real pined, broker and pine-web (docs/mcp.md): pined
// starts pine-web in the egress sandbox with its job on the socket (the search key from .env in
// it, never in argv or the environment); the relay* test worker calls mcp__web__fetch and
// mcp__web__search as a model would, against pages and a fake Brave Search API on 127.0.0.1
// (tests/sources/page_server). Without allowPrivate this machine (by address and by name) and
// plain http are refused; redirects are checked again, at most 5; a body over 2 MB is cut;
// denyHosts holds; the key reaches the search service and not the broker's database; the
// conversation is tainted. Then the real worker's model calls fetch.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "tests/integration/harness.h"
#include "tests/sources/page_server.h"

using namespace pine::test;
using namespace std::chrono_literals;
using pine::sources::test::PageReply;
using pine::sources::test::PageRequest;
using pine::sources::test::PageServer;

namespace {

const std::string kKey = "bsk-web-4c9d2e7a1f5b3086";

void webHome(const std::string& home, const std::map<std::string, std::string>& agents) {
  std::vector<std::string> ids;
  for (auto& [id, yaml] : agents) ids.push_back(id);
  writeMinimalConfig(home, ids);
  for (auto& [id, yaml] : agents) writeText(home + "/agents/" + id + "/agent.yaml", yaml);
  writeText(home + "/.env", "SEARCH_KEY=" + kKey + "\n");
  chmod((home + "/.env").c_str(), 0600);
}

PageReply site(const PageRequest& r) {
  if (r.path == "/page")
    return {200, {{"Content-Type", "text/html"}},
            "<title>Pine page</title><h1>Welcome</h1><p>Read <a href=\"/more\">more here</a>.</p>"
            "<script>steal()</script>"};
  if (r.path == "/to-zero") return {302, {{"Location", "http://0.0.0.0:9/"}}, ""};
  if (r.path.rfind("/r/", 0) == 0) {  // /r/N redirects N times
    int n = std::stoi(r.path.substr(3));
    if (n == 0) return {200, {{"Content-Type", "text/plain"}}, "end of the chain"};
    return {302, {{"Location", "/r/" + std::to_string(n - 1)}}, ""};
  }
  if (r.path == "/big") return {200, {{"Content-Type", "text/plain"}}, std::string(3u << 20, 'b')};
  if (r.path.rfind("/res/v1/web/search", 0) == 0)
    return {200, {{"Content-Type", "application/json"}},
            "{\"web\":{\"results\":[{\"title\":\"Pine found\",\"url\":\"https://pine.example/\","
            "\"description\":\"the <strong>pine</strong> result\"}]}}"};
  return {404, {}, ""};
}

std::string fetchCall(const std::string& url) { return "CALL mcp__web__fetch {\"url\": \"" + url + "\"}\n"; }

struct IgnorePipe {
  IgnorePipe() { signal(SIGPIPE, SIG_IGN); }
} ignorePipe;

}  // namespace

TEST_CASE("web: fetch and search through pine-web in its sandbox; the rules hold; the key stays in pine-web") {
  PageServer server(site);
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  TempDir dir;
  std::string home = dir.path() + "/home";
  webHome(home, {{"relay-open", "description: web on the LAN\ntools: [read]\nmcpServers:\n  web:\n    bundled: web\n"
                                "    allowPrivate: true\n    denyHosts: [localhost]\n    search:\n      url: " +
                                    base + "/res/v1/web/search\n      keySecret: SEARCH_KEY\n"},
                 {"relay-strict", "description: public web only\ntools: [read]\nmcpServers:\n  web:\n    bundled: web\n"}});
  Pined pined(home, {"--worker-program", testBinDir() + "/fixtures/test-worker"}, {});

  auto t = message(pined, "relay-open",
                   fetchCall(base + "/page") + fetchCall(base + "/to-zero") + fetchCall(base + "/r/5") +
                       fetchCall(base + "/r/6") + fetchCall(base + "/big") +
                       fetchCall("http://localhost:" + std::to_string(server.port()) + "/page") +
                       "CALL mcp__web__search {\"query\": \"pine trees\"}\n");
  CAPTURE(t.dump());
  const std::string log = tailOf(pined.stderrText(), 4000);
  CAPTURE(log);
  CHECK(t["state"] == "done");
  std::string a = t.value("answer", "");
  CHECK(contains(a, "mcp__web__fetch: ok: <<<outside-content"));
  CHECK(contains(a, "# Welcome"));
  CHECK(contains(a, "more here (" + base + "/more)"));
  CHECK_FALSE(contains(a, "steal()"));
  // A redirect is checked again: 0.0.0.0 is never connected to, allowPrivate or not.
  CHECK(contains(a, "redirect to http://0.0.0.0:9/"));
  CHECK(contains(a, "reserved address"));
  CHECK(contains(a, "the host localhost is in denyHosts"));
  CHECK(contains(a, "end of the chain"));  // five redirects are followed, a sixth is not
  CHECK(contains(a, "more than 5 redirects"));
  CHECK(contains(a, "Cut: the page is longer than 2097152 bytes"));
  CHECK(contains(a, "1. Pine found\n   https://pine.example/\n   the pine result"));
  CHECK(sessionTainted(pined, "relay-open", "main"));

  // The key reached the search service in its header, and only there.
  std::string sent;
  for (auto& r : server.requests())
    if (r.path.rfind("/res/v1/web/search?q=pine%20trees", 0) == 0) sent = r.header("X-Subscription-Token");
  CHECK(sent == kKey);
  for (auto& r : toolResults(home, t["id"])) CHECK_FALSE(contains(r, kKey));
  auto pids = processesMentioning("pine-web");
  REQUIRE_FALSE(pids.empty());
  for (pid_t pid : pids) {
    std::ifstream envFile("/proc/" + std::to_string(pid) + "/environ");
    std::string env((std::istreambuf_iterator<char>(envFile)), std::istreambuf_iterator<char>());
    CHECK_FALSE(contains(env, kKey));
    std::ifstream cmdFile("/proc/" + std::to_string(pid) + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(cmdFile)), std::istreambuf_iterator<char>());
    CHECK_FALSE(contains(cmd, kKey));
    // In the egress sandbox: not pined's uid (root here), no home to read.
    std::string status = readText("/proc/" + std::to_string(pid) + "/status");
    CHECK_FALSE(contains(status, "\nUid:\t0\t"));
  }
  CHECK_FALSE(contains(pined.stderrText(), kKey));

  // Without allowPrivate: this machine is refused by address and by name, before any request;
  // no search is configured, so there is no search tool.
  size_t before = server.requests().size();
  const std::string port = std::to_string(server.port());
  auto s = message(pined, "relay-strict",
                   fetchCall("https://127.0.0.1:" + port + "/page") + fetchCall("https://localhost:" + port + "/page") +
                       fetchCall(base + "/page") +
                       "CALL mcp__web__search {\"query\": \"x\"}\n");
  CAPTURE(s.dump());
  std::string sa = s.value("answer", "");
  CHECK(contains(sa, "127.0.0.1 is a loopback address"));
  CHECK(contains(sa, "host localhost resolves to"));
  CHECK(contains(sa, "plain http is refused"));
  CHECK(contains(sa, "mcp__web__search: absent"));
  CHECK(server.requests().size() == before);

  auto state = nlohmann::json::parse(pined.ctl({"mcp", "--json"}).out, nullptr, false);
  CAPTURE(state.dump());
  bool listed = false;
  for (auto& srv : state["servers"])
    if (srv["agent"] == "relay-open" && srv["server"] == "web") {
      listed = true;
      CHECK(srv["state"] == "running");
      CHECK(srv["tools"].size() == 2);
    }
  CHECK(listed);
  // pine-web writes to pined's stderr: a sanitizer build's report from it would be here.
  CHECK_FALSE(contains(pined.stderrText(), "ERROR: AddressSanitizer"));
  CHECK_FALSE(contains(pined.stderrText(), "runtime error:"));
}

TEST_CASE("web: the real worker's model fetches a page and reads it as outside content; the session is tainted") {
  PageServer server(site);
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  TempDir dir;
  std::string home = dir.path() + "/home";
  webHome(home, {{"main", "description: main\ntools: [read]\nmcpServers:\n  web:\n    bundled: web\n    allowPrivate: true\n"}});
  writeText(home + "/providers/replies.yaml",
            "replies:\n"
            "  - match: \"read the page\"\n"
            "    turns:\n"
            "      - tool_calls:\n"
            "          - name: mcp__web__fetch\n"
            "            arguments: {url: \"" + base + "/page\"}\n"
            "      - text: \"I read it.\"\n"
            "  - match: \"\"\n"
            "    text: ok\n");
  Pined pined(home, {}, {});
  auto t = message(pined, "main", "Please read the page");
  CAPTURE(t.dump());
  CHECK(t["state"] == "done");
  CHECK(t.value("answer", "") == "I read it.");
  auto results = toolResults(home, t["id"]);
  REQUIRE(results.size() == 1);
  CHECK(contains(results[0], "# Welcome"));
  CHECK(contains(results[0], "<<<outside-content"));
  CHECK(contains(results[0], "MCP server 'web'"));
  CHECK(sessionTainted(pined, "main", "main"));
}
