// Hostile servers against the real process tree (pined, the test broker, pine-egress): a
// malformed, oversized, slow, cut or compressed-bomb answer ends its request with a clear
// error, and pined and the broker go on serving (the next request succeeds, the broker was
// never restarted). pined itself links no libcurl.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/egress/bombs.h"
#include "tests/egress/test_server.h"
#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace egress_hostile {
namespace {

std::string fileText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// pined with the test broker, and a TLS server that is the configured model provider (so
// loopback is allowed for it).
struct Tree {
  pine::egress::test::Identity ca, cert;
  std::unique_ptr<pine::egress::test::TestServer> server;
  TempDir dir;
  std::string home, base;
  std::unique_ptr<Pined> pined;
  int serial = 0;

  Tree() {
    signal(SIGPIPE, SIG_IGN);  // the server writes to clients that gave up
    ca = pine::egress::test::makeCa("pine test CA");
    cert = pine::egress::test::makeServerCert(ca);
    server = std::make_unique<pine::egress::test::TestServer>(&cert);
    home = dir.path() + "/home";
    std::string caFile = dir.path() + "/ca.pem";
    pine::egress::test::writePem(caFile, ca.cert.get());
    writeMinimalConfig(home, {"main"});
    writeText(home + "/.env", "LOCAL_KEY=sk-hostile-4d1f8a7c2e9b\n");
    chmod((home + "/.env").c_str(), 0600);
    base = "https://127.0.0.1:" + std::to_string(server->port());
    writeText(home + "/models.yaml",
              "providers:\n  demo:\n    kind: script\n    script: providers/replies.yaml\n  local:\n    kind: openai\n"
              "    baseUrl: " + base + "/v1\n    keySecret: LOCAL_KEY\n"
              "models:\n  demo:\n    provider: demo\n    contextWindow: 32768\n");
    pined = std::make_unique<Pined>(
        home, std::vector<std::string>{"--broker-program", testBinDir() + "/fixtures/test-broker", "--egress-ca", caFile},
        std::vector<std::string>{}, /*waitForApi=*/false);
  }

  // One call through the test broker; returns what it saw.
  nlohmann::json call(nlohmann::json trigger) {
    std::string result = "result-" + std::to_string(++serial) + ".json";
    trigger["result"] = result;
    if (!trigger.contains("authorization")) trigger["authorization"] = "Bearer ${secret:LOCAL_KEY}";
    writeText(home + "/data/egress-trigger.json.tmp", trigger.dump());
    std::filesystem::rename(home + "/data/egress-trigger.json.tmp", home + "/data/egress-trigger.json");
    bool done = waitUntil([&] { return access((home + "/data/" + result).c_str(), F_OK) == 0; }, 60s);
    REQUIRE_MESSAGE(done, tailOf(pined->stderrText(), 2000));
    return nlohmann::json::parse(fileText(home + "/data/" + result));
  }

  // The broker is the one pined started first, and pined answers the next request.
  void stillServing() {
    nlohmann::json ok = call({{"url", base + "/echo"}});
    CHECK(ok["error"] == "");
    CHECK(ok["status"] == 200);
    CHECK(ok["body"].get<std::string>().find("GET /echo HTTP/1.1") != std::string::npos);
    CHECK(pined->auditEvents("process.restart").empty());
    CHECK(kill(pined->pid(), 0) == 0);
  }
};

}  // namespace
}  // namespace egress_hostile

TEST_CASE("hostile answers end their request with a clear error; pined and the broker keep serving") {
  egress_hostile::Tree t;
  struct Case {
    const char* name;
    std::string path;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"a status line that is not HTTP", "/bad-status", "not valid HTTP"},
      {"a header line without a colon", "/bad-header", "not valid HTTP"},
      {"one header line of 300 KiB", "/huge-header?n=307200", "a response header line is longer than libcurl's limit"},
      {"headers of 300 KiB in all", "/many-headers?n=300", "response headers larger than 262144 bytes"},
      {"a body over the model call's cap of 16 MiB", "/big-chunked?n=17000000", "response larger than 16777216 bytes"},
      {"a connection closed mid-body", "/cut?n=1000", "closed the connection before the answer was complete"},
      {"a chunk cut short", "/cut-chunked", "closed the connection before the answer was complete"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    nlohmann::json r = t.call({{"url", t.base + c.path}});
    std::string error = r["error"];
    CHECK_MESSAGE(error.find(c.expect) != std::string::npos, error);
    CHECK(error.find("sk-hostile") == std::string::npos);
    t.stillServing();
  }
  for (const char* encoding : {"gzip", "deflate", "br"}) {
    CAPTURE(encoding);
    // 64 GiB of zeros in a few megabytes (brotli: kilobytes): cut at the cap on decoded bytes.
    pine::egress::test::Bomb bomb = pine::egress::test::makeBomb(encoding, 65536);
    t.server->setBomb(bomb);
    nlohmann::json r = t.call({{"url", t.base + "/bomb"}});
    std::string error = r["error"];
    CHECK_MESSAGE(error.find("response larger than 16777216 bytes") != std::string::npos, error);
    CHECK(r["bodyBytes"].get<size_t>() <= (16u << 20));
    // Stopped early: the client went away long before the encoded body was out.
    if (std::string(encoding) != "br") CHECK(t.server->bombSent() < bomb.encodedSize() / 2);
    t.stillServing();
  }
}

TEST_CASE("a server that sends a byte a second: the broker gives up, pined kills its egress process") {
  egress_hostile::Tree t;
  nlohmann::json r = t.call({{"url", t.base + "/drip?n=120&gap=1000"}, {"cancelAfterMs", 2500}});
  CHECK(r["cancelled"] == true);
  const std::string program = std::filesystem::canonical(binDir() + "/pine-egress").string();
  auto egressAlive = [&] {  // this test's egress processes only: other tests run beside it
    std::error_code ec;
    for (pid_t pid : descendants(getpid())) {
      std::string exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
      if (!ec && exe == program) return true;
    }
    return false;
  };
  CHECK(waitUntil([&] { return !egressAlive(); }, 5s));
  t.stillServing();
}

TEST_CASE("compressed answers under the cap are decoded in full") {
  egress_hostile::Tree t;
  for (const char* encoding : {"gzip", "deflate", "br"}) {
    CAPTURE(encoding);
    t.server->setBomb(pine::egress::test::makeBomb(encoding, 4));
    nlohmann::json r = t.call({{"url", t.base + "/bomb"}});
    CHECK(r["error"] == "");
    CHECK(r["status"] == 200);
    CHECK(r["bodyBytes"] == (4u << 20));
    std::string body = r["body"];  // the first MiB
    CHECK(body.size() == (1u << 20));
    CHECK(body.find_first_not_of('\0') == std::string::npos);
  }
}

TEST_CASE("pined links no HTTP library; pine-egress does") {
  auto pined = run({"/usr/bin/ldd", binDir() + "/pined"});
  REQUIRE(pined.exitCode == 0);
  CHECK(pined.out.find("libcurl") == std::string::npos);
  CHECK(pined.out.find("libnghttp2") == std::string::npos);
  auto egress = run({"/usr/bin/ldd", binDir() + "/pine-egress"});
  REQUIRE(egress.exitCode == 0);
  CHECK(egress.out.find("libcurl") != std::string::npos);
}
