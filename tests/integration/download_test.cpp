// The download tool through the real processes: the worker asks over its Download capability,
// the broker decides (pine-security.md "Downloads"), pined fetches from a real HTTP server on
// loopback, and the bytes land in the workspace through the worker's sandbox.
#include <doctest/doctest.h>
#include <openssl/sha.h>

#include <filesystem>

#include "tests/egress/test_server.h"
#include "tests/integration/harness.h"

using namespace pine::test;

namespace {

std::string sha256Hex(const std::string& data) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), d);
  std::string out;
  static const char* hex = "0123456789abcdef";
  for (unsigned char c : d) out += std::string{hex[c >> 4], hex[c & 15]};
  return out;
}

std::string downloadReplies(int port) {
  std::string local = "http://127.0.0.1:" + std::to_string(port);
  auto fetch = [](const std::string& match, const std::string& url, const std::string& path) {
    return "  - match: \"" + match + "\"\n    turns:\n      - tool_calls: [{name: download, arguments: {url: \"" + url +
           "\", path: \"" + path + "\"}}]\n      - text: \"Done.\"\n";
  };
  return "replies:\n" + fetch("fetch the report", local + "/big?n=5000", "in/report.txt") +
         fetch("fetch the huge file", local + "/big?n=2000000", "huge.bin") +
         fetch("fetch the moved file", local + "/redirect", "moved.txt") +
         fetch("fetch from elsewhere", "https://files.example/x.bin", "else.bin") +
         fetch("fetch past the workspace", local + "/big?n=10", "../../escaped.txt") +
         fetch("fetch over my network", "https://127.0.0.1:" + std::to_string(port) + "/big?n=10", "net.txt") +
         "  - match: \"read the plain file\"\n    turns:\n      - tool_calls: [{name: read, arguments: {path: plain.txt}}]\n"
         "      - text: \"Read.\"\n"
         "  - match: \"\"\n    text: \"ok\"\n";
}

// Runs one message whose script makes one download call; returns the task and that call's stored result.
std::pair<nlohmann::json, std::string> runOne(Pined& pined, const std::string& agent, const std::string& text) {
  auto t = message(pined, agent, text);
  auto results = pined.toolResults(t["id"]);
  REQUIRE_MESSAGE(results.size() == 1, t.dump());
  return {t, results[0]};
}

}  // namespace

TEST_CASE("download: an MCP server's origin is fetched into the workspace; the rules around it hold") {
  pine::egress::test::TestServer server(nullptr);  // plain HTTP on loopback: the owner's own MCP server
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main", "netty"});
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") + "limits:\n  maxDownloadMb: 1\n");
  writeText(home + "/providers/replies.yaml", downloadReplies(server.port()));
  std::string mcp = "http://127.0.0.1:" + std::to_string(server.port()) + "/mcp";
  writeText(home + "/agents/main/agent.yaml",
            "description: main\ntools: [read, ls, download]\nmcpServers:\n  files: {url: \"" + mcp + "\"}\n");
  writeText(home + "/agents/netty/agent.yaml",
            "description: has network\ntools: [read, download]\nsandbox: {network: all}\n");
  Pined pined(home, {}, {});
  std::string ws = home + "/agents/main/workspace";

  SUBCASE("the MCP server's origin: fetched without a question, byte for byte, size and SHA-256 reported") {
    auto [t, answer] = runOne(pined, "main", "fetch the report");
    const auto& result = answer;  // clang 14 cannot capture a structured binding (CAPTURE)
    CAPTURE(result);
    CHECK(t["state"] == "done");
    std::string got = readText(ws + "/in/report.txt");
    CHECK(got.size() == 5000);
    CHECK(contains(result, "5000 bytes"));
    CHECK(contains(result, sha256Hex(got)));
    auto d = pined.auditJson("download", t["id"]);
    REQUIRE(d.size() == 1);
    CHECK(d[0]["status"] == 200);
    CHECK(d[0]["bytes"] == 5000);
    auto decisions = pined.auditJson("tool.decision", t["id"]);
    REQUIRE(decisions.size() == 1);
    CHECK(decisions[0]["decision"] == "allowed");
    CHECK(pined.api("GET", "/v1/approvals").json()["approvals"].empty());
    bool fetched = false;
    for (auto& r : server.requests()) fetched |= r.rfind("GET /big?n=5000 ", 0) == 0;
    CHECK(fetched);
  }
  SUBCASE("twin of the fenced read (broker_flow_test): without security.taintTools a read is not fenced") {
    writeText(ws + "/plain.txt", "plain text\n");
    auto [t, answer] = runOne(pined, "main", "read the plain file");
    const auto& result = answer;  // clang 14 cannot capture a structured binding (CAPTURE)
    CAPTURE(result);
    CHECK(contains(result, "plain text"));
    CHECK_FALSE(contains(result, "<<<outside-content"));
  }
  SUBCASE("over limits.maxDownloadMb: ends with an error and leaves no file") {
    auto [t, answer] = runOne(pined, "main", "fetch the huge file");
    const auto& result = answer;  // clang 14 cannot capture a structured binding (CAPTURE)
    CAPTURE(result);
    CHECK(contains(result, "larger than 1048576 bytes"));
    CHECK_FALSE(std::filesystem::exists(ws + "/huge.bin"));
    for (auto& e : std::filesystem::directory_iterator(ws)) CHECK(!contains(e.path().filename().string(), ".tmp"));
  }
  SUBCASE("a redirect is reported, not followed") {
    auto [t, answer] = runOne(pined, "main", "fetch the moved file");
    const auto& result = answer;  // clang 14 cannot capture a structured binding (CAPTURE)
    CAPTURE(result);
    CHECK(contains(result, "HTTP 302"));
    CHECK(contains(result, "not followed"));
    CHECK_FALSE(std::filesystem::exists(ws + "/moved.txt"));
    for (auto& r : server.requests()) CHECK(r.rfind("GET /echo", 0) != 0);
  }
  SUBCASE("elsewhere, without web tools or network: refused, the owner not asked, nothing fetched") {
    auto before = pined.auditEvents("egress.request").size();
    auto [t, answer] = runOne(pined, "main", "fetch from elsewhere");
    const auto& result = answer;  // clang 14 cannot capture a structured binding (CAPTURE)
    CAPTURE(result);
    CHECK(contains(result, "no network access"));
    CHECK(contains(result, "request_access"));
    CHECK(pined.auditEvents("egress.request").size() == before);
    CHECK(pined.auditJson("download", t["id"]).empty());
    CHECK(pined.api("GET", "/v1/approvals").json()["approvals"].empty());
    CHECK_FALSE(std::filesystem::exists(ws + "/else.bin"));
  }
  SUBCASE("a place outside the workspace: refused by the jail before anyone is asked") {
    auto [t, answer] = runOne(pined, "main", "fetch past the workspace");
    const auto& result = answer;  // clang 14 cannot capture a structured binding (CAPTURE)
    CAPTURE(result);
    CHECK(contains(result, "refused"));
    CHECK(pined.auditJson("tool.decision", t["id"]).empty());
    CHECK_FALSE(std::filesystem::exists(home + "/agents/escaped.txt"));
    CHECK_FALSE(std::filesystem::exists(home + "/escaped.txt"));
  }
  SUBCASE("over the conversation's network: the broker allows public https, pined refuses loopback") {
    auto [t, answer] = runOne(pined, "netty", "fetch over my network");
    const auto& result = answer;  // clang 14 cannot capture a structured binding (CAPTURE)
    CAPTURE(result);
    CHECK(contains(result, "loopback"));
    CHECK_FALSE(std::filesystem::exists(home + "/agents/netty/workspace/net.txt"));
    auto d = pined.auditJson("download", t["id"]);
    REQUIRE(d.size() == 1);
    CHECK(d[0].contains("error"));
  }
}
