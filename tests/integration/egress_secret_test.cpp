// A secret set with `pinectl secret set` and used by egress against a local TLS
// server: the server receives it; no other process's environment, no file in
// data/ and no log holds it. While a request is in flight, the pine-egress process
// serving it holds the value its request names and no other (memory, environment,
// command line), and a download's holds none.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/egress/test_server.h"
#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {
std::string egressFileText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("a secret set with pinectl and used by egress stays in pined") {
  auto ca = pine::egress::test::makeCa("pine test CA");
  auto cert = pine::egress::test::makeServerCert(ca);
  pine::egress::test::TestServer server(&cert);
  TempDir dir;
  std::string home = dir.path() + "/home", caFile = dir.path() + "/ca.pem";
  pine::egress::test::writePem(caFile, ca.cert.get());
  writeMinimalConfig(home, {"main"});
  Pined pined(home,
              {"--broker-program", testBinDir() + "/fixtures/test-broker", "--egress-ca", caFile},
              {}, /*waitForApi=*/false);
  const std::string secret = "sk-test-Zx81QwPvLm27Rt5Ua9Kd";
  auto set = pined.ctl({"secret", "set", "LOCAL_KEY"}, secret + "\n");
  REQUIRE_MESSAGE(set.exitCode == 0, set.err);
  // Now the configuration may name it: a provider on this machine, then SIGHUP.
  std::string base = "https://127.0.0.1:" + std::to_string(server.port());
  std::ofstream(home + "/models.yaml")
      << "providers:\n  demo:\n    kind: script\n    script: providers/replies.yaml\n  local:\n    kind: openai\n"
      << "    baseUrl: " << base << "/v1\n    keySecret: LOCAL_KEY\n"
      << "models:\n  demo:\n    provider: demo\n    contextWindow: 32768\n";
  REQUIRE(kill(pined.pid(), SIGHUP) == 0);
  REQUIRE(waitUntil([&] { return pined.auditEvents("config.reload").size() >= 2; }, 3s));
  // Whole or not at all: the test broker takes (renames) a trigger as soon as it sees the name.
  writeText(home + "/data/egress-trigger.json.tmp",
            nlohmann::json{{"url", base + "/echo"}, {"authorization", "Bearer ${secret:LOCAL_KEY}"}}.dump());
  std::filesystem::rename(home + "/data/egress-trigger.json.tmp", home + "/data/egress-trigger.json");
  bool got = waitUntil([&] { return access((home + "/data/egress-result.json").c_str(), F_OK) == 0; }, 30s);
  REQUIRE_MESSAGE(got, pined.stderrText());
  auto result = nlohmann::json::parse(egressFileText(home + "/data/egress-result.json"));
  CHECK(result["error"] == "");
  CHECK(result["status"] == 200);
  std::string body = result["body"];
  CHECK(body.find("[redacted]") != std::string::npos);
  CHECK(body.find(secret) == std::string::npos);
  bool received = false;
  for (auto& q : server.requests()) received |= q.find("Bearer " + secret) != std::string::npos;
  CHECK(received);

  // Every process pined started (broker, worker and what the worker's sandbox runs):
  // not in their environment.
  std::vector<pid_t> procs = descendants(pined.pid());
  CHECK(procs.size() >= 2);
  for (pid_t p : procs) {
    CAPTURE(p);
    CHECK(egressFileText("/proc/" + std::to_string(p) + "/environ").find(secret) == std::string::npos);
  }
  // Not in any log, the audit log, or anything else under data/ (where the database will live).
  for (auto& e : std::filesystem::recursive_directory_iterator(home + "/data"))
    if (e.is_regular_file()) CHECK_MESSAGE(egressFileText(e.path()).find(secret) == std::string::npos, e.path());
  CHECK(pined.stderrText().find(secret) == std::string::npos);
  CHECK(pined.auditEvents("egress.request").size() == 1);
}

namespace egress_boundary {
namespace {

std::string exeOf(pid_t pid) {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
}

// The pine-egress processes below pined (the process that exec'd it, not the sandbox's monitor).
std::vector<pid_t> egressProcesses(pid_t pined) {
  std::vector<pid_t> out;
  const std::string program = std::filesystem::canonical(binDir() + "/pine-egress").string();
  for (pid_t p : descendants(pined))
    if (exeOf(p) == program) out.push_back(p);
  return out;
}

std::string statusField(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) {
      std::string v = line.substr(field.size() + 1);
      while (!v.empty() && (v[0] == ' ' || v[0] == '\t')) v.erase(0, 1);
      return v;
    }
  return "";
}

}  // namespace
}  // namespace egress_boundary

TEST_CASE("a request naming secret A runs in a process that holds A and no other .env value; a download holds none") {
  using namespace egress_boundary;
  auto ca = pine::egress::test::makeCa("pine test CA");
  auto cert = pine::egress::test::makeServerCert(ca);
  pine::egress::test::TestServer server(&cert);
  TempDir dir;
  std::string home = dir.path() + "/home", caFile = dir.path() + "/ca.pem";
  pine::egress::test::writePem(caFile, ca.cert.get());
  writeMinimalConfig(home, {"main"});
  const std::string a = "sk-alpha-Q7w2Er9Ty4Ui1Op6As3D", b = "sk-beta-Zx5Cv8Bn2Mm4Ll7Kk9Jj0H",
                    c = "hunter2-gamma-correct-horse-77";
  writeText(home + "/.env", "A_KEY=" + a + "\nB_KEY=" + b + "\nC_PASSWORD=" + c + "\n");
  chmod((home + "/.env").c_str(), 0600);
  std::string base = "https://127.0.0.1:" + std::to_string(server.port());
  writeText(home + "/models.yaml",
            "providers:\n  demo:\n    kind: script\n    script: providers/replies.yaml\n  local:\n    kind: openai\n"
            "    baseUrl: " + base + "/v1\n    keySecret: A_KEY\n"
            "models:\n  demo:\n    provider: demo\n    contextWindow: 32768\n");
  writeText(home + "/agents/main/agent.yaml",
            "description: main\ntools: [read, download]\nmcpServers:\n  files: {url: \"" + base + "/mcp\"}\n");
  Pined pined(home, {"--broker-program", testBinDir() + "/fixtures/test-broker", "--egress-ca", caFile}, {},
              /*waitForApi=*/false);
  std::string token = readText(home + "/data/http-token");
  while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
  REQUIRE(token.size() >= 16);

  // In memory: A, B, C, the control token, and the request's own path (which tells the process
  // serving it from one started ahead of the next request).
  const std::vector<std::string> needles = {a, b, c, token, "/drip?n=40&gap=300"};
  struct Scan {
    std::vector<size_t> memory;
    std::string environ, cmdline;
    std::string uid, seccomp, noNewPrivs;
  };
  // Starts a slow request, finds its pine-egress process once the server has the request, reads it.
  auto inFlight = [&](const nlohmann::json& trigger, size_t requestsBefore) {
    writeText(home + "/data/egress-trigger.json.tmp", trigger.dump());
    std::filesystem::rename(home + "/data/egress-trigger.json.tmp", home + "/data/egress-trigger.json");
    REQUIRE_MESSAGE(waitUntil([&] { return server.requests().size() > requestsBefore; }, 10s), pined.stderrText());
    std::vector<pid_t> procs;
    REQUIRE(waitUntil([&] { return !(procs = egressProcesses(pined.pid())).empty(); }, 5s));
    // The one serving this request, not one started ahead of the next.
    Scan s;
    size_t holding = 0;
    for (pid_t p : procs) {
      // The quick reads first: a sanitizer build's memory takes seconds to scan.
      Scan here;
      here.environ = egressFileText("/proc/" + std::to_string(p) + "/environ");
      here.cmdline = egressFileText("/proc/" + std::to_string(p) + "/cmdline");
      here.uid = statusField(p, "Uid");
      here.seccomp = statusField(p, "Seccomp");
      here.noNewPrivs = statusField(p, "NoNewPrivs");
      size_t bytes = 0;
      here.memory = countInMemory(p, needles, &bytes);
      REQUIRE(bytes > 0);
      if (here.memory[4] == 0) continue;
      // Still serving the request once scanned, so that the scan saw all of its memory.
      REQUIRE_MESSAGE(access(("/proc/" + std::to_string(p) + "/mem").c_str(), F_OK) == 0,
                      "the request ended before its process was scanned: make the drip slower");
      ++holding;
      s = here;
    }
    REQUIRE(holding == 1);
    return s;
  };

  // A model call naming A, slow enough (a byte every 300 ms, 12 s in all) to be looked at in flight, also by a sanitizer build under load.
  Scan s = inFlight({{"url", base + "/drip?n=40&gap=300"}, {"authorization", "Bearer ${secret:A_KEY}"}}, 0);
  CHECK(s.memory[0] >= 1);  // A: the value it was given, filled into the request it made
  CHECK(s.memory[1] == 0);  // B
  CHECK(s.memory[2] == 0);  // C
  CHECK(s.memory[3] == 0);  // the control token
  for (const std::string& v : {a, b, c, token}) {
    CHECK(s.environ.find(v) == std::string::npos);
    CHECK(s.cmdline.find(v) == std::string::npos);
  }
  CHECK(s.cmdline == std::filesystem::canonical(binDir() + "/pine-egress").string() + std::string(1, '\0'));
  CHECK(s.environ.rfind("LANG=C.UTF-8", 0) == 0);
  if (!seatbeltStandIn()) {  // what the Linux backend adds; the stand-in enforces nothing
    CHECK(s.seccomp == "2");
    CHECK(s.noNewPrivs == "1");
    if (geteuid() == 0) CHECK(s.uid.rfind("65534\t", 0) == 0);
  }
  REQUIRE(waitUntil([&] { return access((home + "/data/egress-result.json").c_str(), F_OK) == 0; }, 30s));
  auto result = nlohmann::json::parse(egressFileText(home + "/data/egress-result.json"));
  CHECK(result["error"] == "");
  CHECK(result["body"] == std::string(40, 'x'));
  bool sent = false;
  for (auto& q : server.requests()) sent |= q.find("Bearer " + a) != std::string::npos;
  CHECK(sent);

  // A download of the agent's MCP server's origin: no secret at all.
  Scan d = inFlight({{"kind", "download"}, {"agent", "main"}, {"url", base + "/drip?n=40&gap=300"},
                     {"result", "download-result.json"}},
                    server.requests().size());
  for (size_t i = 0; i < 4; ++i) CHECK(d.memory[i] == 0);
  REQUIRE(waitUntil([&] { return access((home + "/data/download-result.json").c_str(), F_OK) == 0; }, 30s));
  auto dl = nlohmann::json::parse(egressFileText(home + "/data/download-result.json"));
  CHECK(dl["error"] == "");
  CHECK(dl["body"] == std::string(40, 'x'));
  CHECK(pined.auditEvents("egress.request").size() == 2);
}
