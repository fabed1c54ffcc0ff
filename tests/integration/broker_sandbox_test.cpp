// The broker's sandbox, tried from inside: pined starts tests/fixtures/probe-broker
// in place of pine-broker, under exactly the sandbox pine-broker gets, and the
// probe reports the errno of each attempt (data/probe-result.json). Reading .env,
// writing pine.yaml or an agent's file, making files in the home, exec'ing /bin/sh
// (by itself or through the loader) and binding other ports fail; reading the
// configuration, writing data/, making a socket in the home and binding the
// control API's port work.
#include <doctest/doctest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sandbox/linux/landlock.h"
#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

nlohmann::json probeResult(Pined& pined) {
  std::string path = pined.home() + "/data/probe-result.json";
  bool got = waitUntil([&] { return access(path.c_str(), F_OK) == 0; }, 10s);
  REQUIRE_MESSAGE(got, tailOf(pined.stderrText(), 4000));
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

}  // namespace

TEST_CASE("from inside the broker's sandbox: no .env, no configuration writes, no exec; config and data/ work") {
  LINUX_BACKEND_ONLY();
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  writeText(home + "/.env", "PROBE_SECRET=never-read-by-the-broker-1234\n");
  chmod((home + "/.env").c_str(), 0600);
  Pined pined(home, {"--broker-program", testBinDir() + "/fixtures/probe-broker"}, {}, /*waitForApi=*/false);
  auto r = probeResult(pined);
  INFO(r.dump(2));

  // What it may not do.
  CHECK(r["read_env"] == EACCES);            // masked in its mount namespace (and, as root, not its file)
  CHECK(r["write_config"] == EACCES);        // Landlock: the home is read-only to it
  CHECK(r["write_agent_yaml"] == EACCES);
  CHECK(r["create_in_home"] == EACCES);      // only sockets may be made there
  CHECK(r["create_in_agents"] == EACCES);
  CHECK(r["read_sandbox_dir"] == EACCES);    // the workers' folders are hidden
  CHECK(r["read_bin_sh"] == EACCES);         // no folder of programs is readable
  CHECK(r["exec_sh"] == EACCES);             // Landlock: nothing executable but its program and loader
  CHECK(r["exec_sh_by_loader"] != 1042);     // the loader runs, but cannot read /bin/sh
  CHECK(r["forbid_exec"] == 0);
  CHECK(r["exec_sh_after_promise"] == EPERM);  // and after the broker's promise, no exec at all
  CHECK(r["exec_loader_after_promise"] == EPERM);
  CHECK(r["unix_connect_pined"] != 0);       // pined.sock is hidden from it
  CHECK(r["unix_listen_home"] != 0);         // no socket of its own in the home: pined listens on pine.sock
  if (pine::sandbox::landlock::kernelAbi() >= 4) CHECK(r["tcp_bind_other"] == EACCES);
  if (geteuid() == 0) CHECK(r["uid"] != 0);  // its own uid, not root

  // What it needs.
  CHECK(r["read_config"] == 0);
  CHECK(r["read_agent_yaml"] == 0);
  CHECK(r["write_data"] == 0);
  CHECK(r["tcp_bind_api"] == 0);

  auto starts = pined.auditJson("process.start");
  bool audited = false;
  for (auto& s : starts)
    if (s.value("process", "") == "broker") audited = s.value("sandbox", "").rfind("linux:", 0) == 0;
  CHECK(audited);
}

TEST_CASE("from inside the broker's sandbox: no connection to an MQTT server its sources name; pine-mqtt keeps those") {
  LINUX_BACKEND_ONLY();
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  // A server that would accept: the refusal is the sandbox's, not a closed port.
  int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(server, (sockaddr*)&a, sizeof a) == 0);
  REQUIRE(listen(server, 4) == 0);
  socklen_t len = sizeof a;
  getsockname(server, (sockaddr*)&a, &len);
  int port = ntohs(a.sin_port);
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "sources:\n  - {name: house, type: mqtt, url: \"mqtt://127.0.0.1:" << port << "\", topics: [\"house/#\"]}\n";
  Pined pined(home, {"--broker-program", testBinDir() + "/fixtures/probe-broker"}, {}, /*waitForApi=*/false);
  auto r = probeResult(pined);
  INFO(r.dump(2));
  if (pine::sandbox::landlock::kernelAbi() >= 4)
    CHECK(r["tcp_connect_mqtt"] == EACCES);
  else
    MESSAGE("Landlock ABI < 4: TCP connect is not restricted by this kernel");
  CHECK(r["tcp_bind_api"] == 0);  // what it needs still works
  close(server);
}

TEST_CASE("as root the broker runs as its own uid, which owns data/, and pinectl still reads data/") {
  LINUX_BACKEND_ONLY();
  if (geteuid() != 0) return;
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  pid_t monitor = pined.rolePid("broker");
  REQUIRE(monitor > 0);
  struct stat data;
  REQUIRE(stat((home + "/data").c_str(), &data) == 0);
  CHECK(data.st_uid != 0);
  struct stat token;
  REQUIRE(stat((home + "/data/http-token").c_str(), &token) == 0);
  CHECK(token.st_uid == data.st_uid);
  CHECK((token.st_mode & 077) == 0);
  // The broker itself (below its launcher and the namespace's init) runs as that uid.
  std::vector<pid_t> below = childrenOf(monitor);
  REQUIRE(below.size() == 1);
  std::vector<pid_t> broker = childrenOf(below[0]);
  REQUIRE(broker.size() == 1);
  std::ifstream status("/proc/" + std::to_string(broker[0]) + "/status");
  std::string line, uidLine;
  while (std::getline(status, line))
    if (line.rfind("Uid:", 0) == 0) uidLine = line;
  CHECK(uidLine.find(std::to_string(data.st_uid)) != std::string::npos);
  // pinectl, as root, reads the token (the control API answers) and the audit log.
  CHECK(pined.ctl({"status"}).exitCode == 0);
  CHECK(pined.ctl({"send", "main", "hello"}).exitCode == 0);
  CHECK(!pined.auditEvents("task.end").empty());
  // .env stays root's alone, whatever the broker's uid.
  struct stat env;
  REQUIRE(stat((home + "/.env").c_str(), &env) == 0);
  CHECK(env.st_uid == 0);
  CHECK((env.st_mode & 077) == 0);
}
