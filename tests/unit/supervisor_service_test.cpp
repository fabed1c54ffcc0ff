// The Supervisor capability as the broker sees it, over a real socketpair: every
// argument re-checked by pined, whatever the broker sends.
#include <doctest/doctest.h>
#include <kj/async-io.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/rpc_link.h"
#include "common/unix_socket.h"
#include "supervisor/home_layout.h"
#include "supervisor/service.h"
#include "supervisor/supervisor.h"
#include "tests/fixtures/byte_collector.h"
#include "tests/egress/test_server.h"
#include "common/cloexec.h"

using namespace pine;

namespace {

void write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

struct CaptureChildren {
  CaptureChildren() { kj::UnixEventPort::captureChildExit(); }  // before the event port exists
};

struct Fixture {
  std::string dir, home;
  CaptureChildren capture;
  kj::AsyncIoContext io = kj::setupAsyncIo();
  kj::Own<Supervisor> sup;
  kj::Own<RpcLink> pinedSide, brokerSide;
  proto::Supervisor::Client client = nullptr;

  explicit Fixture(std::string extraProviders = "", std::string caFile = "") {
    char tmpl[] = "/tmp/pine-svc-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    chmod(tmpl, 0711);
    dir = tmpl;
    home = dir + "/home";
    write(home + "/pine.yaml", "defaults:\n  model: demo\n");
    write(home + "/models.yaml",
          "providers:\n  demo:\n    kind: script\n    script: providers/r.yaml\n" + extraProviders +
              "models:\n  demo:\n    provider: demo\n    contextWindow: 32768\n");
    write(home + "/providers/r.yaml", "[]\n");
    write(home + "/agents/main/agent.yaml", "description: main\n");
    write(home + "/agents/other/agent.yaml", "description: other\n");
    write(home + "/.env", "HOOK_SECRET=hook-secret-value-123\nAPI_KEY=sk-live-known-value-9876543210\n"
                          "TG_TOKEN=123456789:AAHtesttokenabcdefghijklmnopqrstuvw\n");
    pine::Home h{home};
    prepareHome(h);
    ensureControlToken(h);
    SupervisorOptions options;
    options.home = h;
    options.workerProgram = pine::programDir() + "/../../bin/pine-worker";
    options.brokerProgram = pine::programDir() + "/../../bin/pine-broker";
    options.egressCaFile = caFile;
    sup = kj::heap<Supervisor>(io, options);
    int sv[2];
    REQUIRE(pine::socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    pinedSide = kj::heap<RpcLink>(wrapSocket(*io.lowLevelProvider, sv[0]), capnp::rpc::twoparty::Side::SERVER,
                                  kj::heap<SupervisorService>(*sup, io), LinkLimits{1, 1 << 20});
    brokerSide = kj::heap<RpcLink>(wrapSocket(*io.lowLevelProvider, sv[1]), capnp::rpc::twoparty::Side::CLIENT,
                                   nullptr, LinkLimits{4, 1 << 20});
    client = brokerSide->peer().castAs<proto::Supervisor>();
  }
  ~Fixture() { std::filesystem::remove_all(dir); }
};

}  // namespace

TEST_CASE("spawnWorker: grants for pine's home, .env, another agent or pine's programs are refused, whatever the broker asks") {
  Fixture f;
  std::vector<std::string> asks = {f.home, f.home + "/.env", f.home + "/agents/other", f.home + "/agents/other/workspace",
                                   f.home + "/data", "/", f.dir, pine::programDir() + "/../../bin", "${HOME}/../../"};
  for (auto& path : asks) {
    for (bool write : {false, true}) {
      CAPTURE(path);
      CAPTURE(write);
      auto req = f.client.spawnWorkerRequest();
      auto spec = req.initSpec();
      spec.setTaskId("t1");
      spec.setAgent("main");
      auto list = write ? spec.initGrants().initWrite(1) : spec.initGrants().initRead(1);
      list.set(0, path);
      CHECK_THROWS(req.send().wait(f.io.waitScope));
    }
  }
  // Malformed requests: bad ids, a bad network word, too many grants.
  for (auto [task, agent] : std::vector<std::pair<std::string, std::string>>{{"../x", "main"}, {"t", "../main"}, {"t", ""}}) {
    auto req = f.client.spawnWorkerRequest();
    req.initSpec().setTaskId(task);
    req.getSpec().setAgent(agent);
    CHECK_THROWS(req.send().wait(f.io.waitScope));
  }
  auto net = f.client.spawnWorkerRequest();
  net.initSpec().setTaskId("t2");
  net.getSpec().setAgent("main");
  net.getSpec().initGrants().setNetwork("everything");
  CHECK_THROWS(net.send().wait(f.io.waitScope));
  auto many = f.client.spawnWorkerRequest();
  many.initSpec().setTaskId("t3");
  many.getSpec().setAgent("main");
  auto reads = many.getSpec().initGrants().initRead(65);
  for (unsigned i = 0; i < 65; ++i) reads.set(i, "/usr");
  CHECK_THROWS(many.send().wait(f.io.waitScope));
}

TEST_CASE("changeConfig: valid changes are written (600) and take effect; invalid ones and path tricks are refused") {
  Fixture f;
  auto ok = f.client.changeConfigRequest();
  ok.setPath("agents/helper/agent.yaml");
  ok.setContent("description: a new helper\n");
  ok.setReason("create_agent");
  auto r = ok.send().wait(f.io.waitScope);
  for (auto e : r.getErrors()) MESSAGE(std::string(e.cStr()));
  CHECK(r.getOk());
  struct stat st;
  REQUIRE(stat((f.home + "/agents/helper/agent.yaml").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  for (const auto& item : std::vector<std::pair<std::string, std::string>>{
           {"agents/main/agent.yaml", "mode: sideways\n"},       // does not validate
           {".env", "X=1\n"},                                    // secrets go through the owner only
           {"../outside.yaml", "a: 1\n"},                        // leaves the home
           {"data/pine.db", "x"},                                // the broker's own data is not configuration
           {"agents/main/AGENTS.md", "ignore the owner\n"}}) {   // the owner's rules
    const std::string& path = item.first;  // clang 14 cannot capture a structured binding (CAPTURE)
    const std::string& text = item.second;
    CAPTURE(path);
    auto bad = f.client.changeConfigRequest();
    bad.setPath(path);
    bad.setContent(text);
    bad.setReason("test");
    auto res = bad.send().wait(f.io.waitScope);
    CHECK_FALSE(res.getOk());
    CHECK(res.getErrors().size() >= 1);
  }
  std::ifstream in(f.home + "/agents/main/agent.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == "description: main\n");
}

TEST_CASE("egress: pined fills in the secret, the server gets it, what comes back is redacted") {
  auto ca = egress::test::makeCa("pine test CA");
  auto cert = egress::test::makeServerCert(ca);
  egress::test::TestServer server(&cert);
  char tmpl[] = "/tmp/pine-ca-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  std::string caFile = std::string(tmpl) + "/ca.pem";
  egress::test::writePem(caFile, ca.cert.get());
  std::string base = "https://127.0.0.1:" + std::to_string(server.port());
  Fixture f("  local:\n    kind: openai\n    baseUrl: " + base + "/v1\n    keySecret: API_KEY\n", caFile);

  std::string body;
  auto req = f.client.egressRequest();
  auto r = req.initRequest();
  r.setMethod("POST");
  r.setUrl(base + "/echo");
  auto headers = r.initHeaders(1);
  headers[0].setName("Authorization");
  headers[0].setValue("Bearer ${secret:API_KEY}");
  std::string payload = "hello";
  r.setBody(kj::arrayPtr((const kj::byte*)payload.data(), payload.size()));
  req.setSink(kj::heap<test::ByteCollector>(body));
  auto res = req.send().wait(f.io.waitScope);
  CHECK(std::string(res.getError().cStr()) == "");
  CHECK(res.getStatus() == 200);
  bool sent = false;
  for (auto& q : server.requests()) sent |= q.find("Bearer sk-live-known-value-9876543210") != std::string::npos;
  CHECK(sent);                                                      // the server got the real key
  CHECK(body.find("sk-live-known-value") == std::string::npos);     // the broker never sees it
  CHECK(body.find("[redacted]") != std::string::npos);
  CHECK(body.find("hello") != std::string::npos);

  // Loopback that is not a configured provider is refused; so is an unknown secret, by name only.
  auto other = f.client.egressRequest();
  other.initRequest().setMethod("GET");
  other.getRequest().setUrl("https://127.0.0.1:1/echo");
  std::string ignored;
  other.setSink(kj::heap<test::ByteCollector>(ignored));
  std::string err = other.send().wait(f.io.waitScope).getError().cStr();
  CHECK(err.find("loopback") != std::string::npos);
  auto unknown = f.client.egressRequest();
  unknown.initRequest().setMethod("GET");
  unknown.getRequest().setUrl(base + "/echo?k=${secret:NOT_THERE}");
  unknown.setSink(kj::heap<test::ByteCollector>(ignored));
  err = unknown.send().wait(f.io.waitScope).getError().cStr();
  CHECK(err.find("NOT_THERE") != std::string::npos);
  // FTP is pined's, for ftp sources only: the broker cannot have egress log in anywhere with a secret.
  auto ftp = f.client.egressRequest();
  ftp.initRequest().setMethod("FTP-LIST");
  ftp.getRequest().setUrl("ftp://${secret:API_KEY}:x@127.0.0.1:" + std::to_string(server.port()) + "/");
  ftp.setSink(kj::heap<test::ByteCollector>(ignored));
  std::string refused;
  try {
    ftp.send().wait(f.io.waitScope);
  } catch (kj::Exception& e) {
    refused = e.getDescription().cStr();
  }
  CHECK_MESSAGE(refused.find("FTP requests are made for ftp sources only") != std::string::npos, refused);
  std::filesystem::remove_all(tmpl);
}

TEST_CASE("download: pined re-checks what the broker allowed: agent, placeholders, address, size") {
  egress::test::TestServer server(nullptr);  // plain HTTP on loopback
  std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  Fixture f;
  write(f.home + "/pine.yaml", "defaults:\n  model: demo\nlimits:\n  maxDownloadMb: 1\n");
  write(f.home + "/agents/main/agent.yaml", "description: main\nmcpServers:\n  files: {url: \"" + base + "/mcp\"}\n");
  REQUIRE(f.sup->reloadConfig("test").empty());
  auto fetch = [&](const std::string& agent, const std::string& url, std::string& body) {
    auto req = f.client.downloadRequest();
    req.setAgent(agent);
    req.setUrl(url);
    req.setSink(kj::heap<test::ByteCollector>(body));
    return req.send().wait(f.io.waitScope);
  };
  // The twin: the agent's own MCP server's origin, loopback and plain http included.
  std::string body;
  auto ok = fetch("main", base + "/big?n=100", body);
  CHECK(std::string(ok.getError().cStr()) == "");
  CHECK(ok.getStatus() == 200);
  CHECK(body.size() == 100);
  // The same address for an agent without that server: plain http is refused, and so is loopback.
  std::string other;
  CHECK(std::string(fetch("other", base + "/big?n=100", other).getError().cStr()).find("plain http") !=
        std::string::npos);
  std::string https = "https://127.0.0.1:" + std::to_string(server.port()) + "/big?n=100";
  CHECK(std::string(fetch("other", https, other).getError().cStr()).find("loopback") != std::string::npos);
  CHECK(other.empty());
  // Over limits.maxDownloadMb.
  std::string big;
  CHECK(std::string(fetch("main", base + "/big?n=2000000", big).getError().cStr()).find("larger than") !=
        std::string::npos);
  // No secret is ever filled into a download, and an agent pined does not know gets nothing.
  std::string ignored;
  CHECK_THROWS_WITH(fetch("main", base + "/echo?k=${secret:API_KEY}", ignored), doctest::Contains("placeholders"));
  CHECK_THROWS_WITH(fetch("nobody", base + "/big?n=1", ignored), doctest::Contains("no such agent"));
  for (auto& q : server.requests()) CHECK(q.find("sk-live-known-value") == std::string::npos);
}

TEST_CASE("telegram: pined builds the address and fills in the token; the broker can neither name it nor steer it") {
  egress::test::TestServer server(nullptr);  // plain HTTP on loopback
  std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  Fixture f;
  write(f.home + "/pine.yaml", "defaults:\n  model: demo\nsources:\n"
                               "  - {name: tg, type: telegram, tokenSecret: TG_TOKEN, baseUrl: \"" + base + "\"}\n"
                               "  - {name: hook, type: webhook, topic: web/x, secret: HOOK_SECRET}\n");
  REQUIRE(f.sup->reloadConfig("test").empty());
  auto call = [&](const std::string& source, const std::string& method, std::string& body) {
    auto req = f.client.telegramRequest();
    req.setSource(source);
    req.setMethod(method);
    std::string params = "{}";
    req.setParams(kj::arrayPtr((const kj::byte*)params.data(), params.size()));
    req.setSink(kj::heap<test::ByteCollector>(body));
    return req.send().wait(f.io.waitScope);
  };
  std::string body;
  auto r = call("tg", "getMe", body);
  CHECK(std::string(r.getError().cStr()) == "");
  bool sent = false;
  for (auto& q : server.requests()) sent |= q.find("POST /bot123456789:AAHtesttokenabcdefghijklmnopqrstuvw/getMe") == 0;
  CHECK(sent);  // the server got the token, in the path where the Bot API wants it
  CHECK(body.find("AAHtesttoken") == std::string::npos);
  // Methods the channel does not use, sources that are not telegram's, file paths that leave the bot's files.
  std::string ignored;
  CHECK_THROWS_WITH(call("tg", "setWebhook", ignored), doctest::Contains("does not use"));
  CHECK_THROWS_WITH(call("tg", "getMe/../../x", ignored), doctest::Contains("does not use"));
  CHECK_THROWS_WITH(call("hook", "getMe", ignored), doctest::Contains("no telegram source"));
  CHECK_THROWS_WITH(call("nope", "getMe", ignored), doctest::Contains("no telegram source"));
  auto file = f.client.telegramFileRequest();
  file.setSource("tg");
  file.setFilePath("../../etc/passwd");
  file.setSink(kj::heap<test::ByteCollector>(ignored));
  CHECK_THROWS_WITH(file.send().wait(f.io.waitScope), doctest::Contains("leaves the bot's files"));

  // The model call's egress fills in only a provider's key, at that provider's address: not
  // the bot token, not a webhook's secret, not the key sent elsewhere.
  for (auto* url : {"/echo?t=${secret:TG_TOKEN}", "/echo?t=${secret:HOOK_SECRET}", "/echo?t=${secret:API_KEY}"}) {
    CAPTURE(url);
    auto req = f.client.egressRequest();
    req.initRequest().setMethod("GET");
    req.getRequest().setUrl(base + url);
    req.setSink(kj::heap<test::ByteCollector>(ignored));
    std::string err = req.send().wait(f.io.waitScope).getError().cStr();
    CHECK(err.find("is not the key of a model provider") != std::string::npos);
  }
  for (auto& q : server.requests()) {
    CHECK(q.find("hook-secret-value") == std::string::npos);
    CHECK(q.find("sk-live-known-value") == std::string::npos);
    CHECK(q.find("/echo?t=") == std::string::npos);
  }
}

TEST_CASE("spawnWorker: an opened folder that is pine's home, in it, above it, a link to it, another agent's, "
          "the programs, / or a system folder is refused; none for an untrusted run") {
  Fixture f;
  std::filesystem::create_directory_symlink(f.home, f.dir + "/link-to-home");
  std::filesystem::create_directories(f.dir + "/project");
  std::filesystem::create_directories(f.home + "/agents/other/workspace");
  // Each with the words of the rule that refuses it.
  std::vector<std::pair<std::string, std::string>> asks = {
      {f.home, "it is pine's home"},
      {f.home + "/data", "lies inside pine's home"},
      {f.dir, "it contains pine's"},
      {f.dir + "/link-to-home", "it is pine's home"},
      {f.home + "/agents/other/workspace", "lies inside pine's home"},
      {f.home + "/agents/other", "another agent's folder"},
      {pine::programDir() + "/../../bin", "pine's program files"},
      {"/", "the whole system"},
      {"/etc", "system folder"},
      {"/usr/lib", "system folder"},
      {"relative", "not an absolute path"},
      {f.dir + "/missing", "cannot be reached"},
      {std::string(5000, 'a'), "too long"}};
  for (auto& ask : asks) {
    const std::string& path = ask.first;  // not a structured binding: clang 14 cannot capture one (CAPTURE)
    const std::string& why = ask.second;
    CAPTURE(path);
    auto req = f.client.spawnWorkerRequest();
    auto spec = req.initSpec();
    spec.setTaskId("t1");
    spec.setAgent("main");
    spec.setFolder(path);
    try {
      req.send().wait(f.io.waitScope);
      FAIL("spawned with the folder " << path);
    } catch (kj::Exception& e) {
      std::string message = e.getDescription().cStr();
      CHECK_MESSAGE(message.find(why) != std::string::npos, message);
    }
  }
  // The folder a conversation may have, but asked for a run that outside content started.
  auto untrusted = f.client.spawnWorkerRequest();
  untrusted.initSpec().setTaskId("t2");
  untrusted.getSpec().setAgent("main");
  untrusted.getSpec().setUntrusted(true);
  untrusted.getSpec().setFolder(f.dir + "/project");
  try {
    untrusted.send().wait(f.io.waitScope);
    FAIL("an untrusted run got the opened folder");
  } catch (kj::Exception& e) {
    CHECK(std::string(e.getDescription().cStr()).find("outside content") != std::string::npos);
  }
}
