// A secret set with `pinectl secret set` and used by egress against a local TLS
// server: the server receives it; no other process's environment, no file in
// data/ and no log holds it.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/egress/test_server.h"
#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
std::vector<pid_t> descendants(pid_t root) {
  std::vector<pid_t> out, todo = {root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    for (pid_t c : childrenOf(p)) {
      out.push_back(c);
      todo.push_back(c);
    }
  }
  return out;
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
  std::ofstream(home + "/egress-trigger.json")
      << nlohmann::json{{"url", base + "/echo"}, {"authorization", "Bearer ${secret:LOCAL_KEY}"}}.dump();
  bool got = waitUntil([&] { return access((home + "/egress-result.json").c_str(), F_OK) == 0; }, 10s);
  REQUIRE_MESSAGE(got, pined.stderrText());
  auto result = nlohmann::json::parse(slurp(home + "/egress-result.json"));
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
    CHECK(slurp("/proc/" + std::to_string(p) + "/environ").find(secret) == std::string::npos);
  }
  // Not in any log, the audit log, or anything else under data/ (where the database will live).
  for (auto& e : std::filesystem::recursive_directory_iterator(home + "/data"))
    if (e.is_regular_file()) CHECK_MESSAGE(slurp(e.path()).find(secret) == std::string::npos, e.path());
  CHECK(pined.stderrText().find(secret) == std::string::npos);
  CHECK(pined.auditEvents("egress.request").size() == 1);
}
