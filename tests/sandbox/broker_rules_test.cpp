// The broker's policy as the Linux backend turns it into Landlock rules: read
// without execute, execute on its program alone, sockets in the home, writes in
// data/, TCP per port.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "sandbox/linux/landlock.h"
#include "sandbox/linux/namespaces.h"
#include "sandbox/linux/plan.h"
#include "sandbox/policy.h"

using namespace pine::sandbox;
namespace ll = pine::sandbox::landlock;

namespace {

struct BrokerTree {
  std::string root, home;
  BrokerTree() {
    char tmpl[] = "/tmp/pine-broker-rules-XXXXXX";
    root = mkdtemp(tmpl);
    home = root + "/home";
    for (auto d : {home + "/data", home + "/agents/main/workspace", home + "/sandbox", root + "/bin"})
      std::filesystem::create_directories(d);
    std::ofstream(home + "/.env") << "SECRET=1\n";
    std::ofstream(home + "/pine.yaml") << "http:\n  port: 7433\n";
    std::ofstream(root + "/bin/pine-broker") << "x";
  }
  ~BrokerTree() { std::filesystem::remove_all(root); }
  Policy policy() const {
    BrokerPaths b;
    b.pineHome = home;
    b.program = root + "/bin/pine-broker";
    b.workspaces = {home + "/agents/main/workspace"};
    b.listenPorts = {7433};
    b.connectPorts = {1883};
    return brokerPolicy(b);
  }
};

std::map<std::string, uint64_t> byPath(const std::vector<ll::Rule>& rules) {
  std::map<std::string, uint64_t> m;
  for (auto& r : rules) m[r.path] |= r.access;
  return m;
}

}  // namespace

TEST_CASE("Landlock for the broker: read without execute, execute on its program, nothing made in the home") {
  BrokerTree t;
  Policy p = t.policy();
  // As with a mount namespace: the masks hide what is denied inside the home.
  auto rules = byPath(ll::computeRules(p, 6, {}, p.denyRead));
  for (auto& rule : rules) {
    const std::string& path = rule.first;
    const uint64_t access = rule.second;
    CAPTURE(path);
    if (path == t.root + "/bin/pine-broker")
      CHECK((access & (ll::kExecute | ll::kReadFile)) == (ll::kExecute | ll::kReadFile));
    else
      CHECK((access & ll::kExecute) == 0);
  }
  REQUIRE(rules.count(t.home));
  CHECK((rules[t.home] & ll::kReadFile) != 0);
  // No socket either: pined listens on pine.sock and hands the broker each checked connection.
  CHECK((rules[t.home] & (ll::kMakeSock | ll::kWriteFile | ll::kMakeReg | ll::kRemoveFile | ll::kMakeDir | ll::kMakeSym | ll::kRefer)) == 0);
  REQUIRE(rules.count(t.home + "/data"));
  CHECK((rules[t.home + "/data"] & ll::kWrite) == ll::kWrite);

  // Without a mount namespace .env is carved out: the home loses reading, its files keep it.
  auto carved = byPath(ll::computeRules(p, 6, {}));
  CHECK((carved[t.home] & ll::kReadFile) == 0);
  CHECK((carved[t.home] & ll::kMakeSock) == 0);
  CHECK(carved.count(t.home + "/.env") == 0);
  CHECK((carved[t.home + "/pine.yaml"] & ll::kReadFile) != 0);

  // A worker's policy keeps execute wherever it may read.
  Policy worker;
  worker.readable = {t.home + "/agents"};
  auto w = byPath(ll::computeRules(worker, 6, {}));
  CHECK((w[t.home + "/agents"] & ll::kExecute) != 0);
}

TEST_CASE("TCP for the broker: bind on the control API's port, connect to the MQTT port, from ABI 4") {
  BrokerTree t;
  Policy p = t.policy();
  auto rules = ll::computePortRules(p, 4);
  REQUIRE(rules.size() == 2);
  std::map<uint64_t, uint64_t> ports;
  for (auto& r : rules) ports[r.port] = r.access;
  CHECK(ports[7433] == ll::kNetBindTcp);
  CHECK(ports[1883] == ll::kNetConnectTcp);
  CHECK(ll::computePortRules(p, 3).empty());
  Policy worker;
  CHECK(ll::computePortRules(worker, 7).empty());

  Probe probe = probeKernel();
  if (probe.landlockAbi == 0 || !probe.seccomp) return;
  LinuxPlan plan = buildLinuxPlan(p, LinuxOptions{}, probe);
  CHECK(!plan.newNetNs);  // its listeners are on the host's loopback
  if (probe.landlockAbi >= 4) {
    CHECK(plan.landlock.handledNet == (ll::kNetBindTcp | ll::kNetConnectTcp));
    CHECK(plan.landlock.portRules.size() == 2);
  } else {
    bool noted = false;
    for (auto& n : plan.notes) noted |= n.find("ports") != std::string::npos;
    CHECK(noted);
  }
}

TEST_CASE("Landlock for the broker: a watched folder in a workspace is readable, the rest of the workspace is not") {
  BrokerTree t;
  std::string ws = t.home + "/agents/main/workspace";
  std::filesystem::create_directories(ws + "/inbox");
  std::filesystem::create_directories(ws + "/private");
  std::ofstream(ws + "/notes.txt") << "mine\n";
  BrokerPaths b;
  b.pineHome = t.home;
  b.program = t.root + "/bin/pine-broker";
  b.workspaces = {ws};
  b.watchedFolders = {ws + "/inbox"};
  Policy p = brokerPolicy(b);
  for (bool masks : {true, false}) {  // with a mount namespace (masks hide the denied) and without
    CAPTURE(masks);
    auto rules = byPath(masks ? ll::computeRules(p, 6, {}, p.denyRead) : ll::computeRules(p, 6, {}));
    REQUIRE(rules.count(ws + "/inbox"));
    CHECK((rules[ws + "/inbox"] & (ll::kReadFile | ll::kReadDir)) == (ll::kReadFile | ll::kReadDir));
    CHECK((rules[ws + "/inbox"] & (ll::kWriteFile | ll::kMakeReg | ll::kRemoveFile)) == 0);
    if (!masks) {
      // Nothing else of the workspace, and nothing above it, can be read: a file made there later has no rule.
      CHECK((rules[ws] & ll::kReadFile) == 0);
      CHECK((rules[ws] & ll::kReadDir) == 0);
      CHECK(rules.count(ws + "/notes.txt") == 0);
      CHECK(rules.count(ws + "/private") == 0);
      CHECK((rules[t.home + "/agents/main"] & ll::kReadFile) == 0);
    }
  }
}

TEST_CASE("read-only binds: a missing guarded file is noted, unless a tree around it is read-only as a whole") {
  std::string root = std::filesystem::temp_directory_path() / ("pine-binds-" + std::to_string(getpid()));
  std::filesystem::create_directories(root + "/ws/.git");
  std::ofstream(root + "/ws/AGENTS.md") << "x\n";
  Policy p;
  p.writable = {root + "/ws"};
  p.denyWrite = {root + "/ws/AGENTS.md", root + "/ws/MEMORY.md"};
  std::vector<std::string> guarded, unguarded;
  pine::sandbox::ns::computeBinds(p, (uid_t)-1, (gid_t)-1, guarded, unguarded);
  CHECK(guarded == std::vector<std::string>{root + "/ws/AGENTS.md"});
  // A tainted run's workspace: MEMORY.md is missing, and nothing keeps the run from making it.
  CHECK(unguarded == std::vector<std::string>{root + "/ws/MEMORY.md"});

  // An untrusted run's: the workspace itself is denied, so the missing file cannot be made either.
  p.denyWrite.push_back(root + "/ws");
  guarded.clear();
  unguarded.clear();
  pine::sandbox::ns::computeBinds(p, (uid_t)-1, (gid_t)-1, guarded, unguarded);
  CHECK(guarded == std::vector<std::string>{root + "/ws/AGENTS.md"});
  CHECK(unguarded.empty());
  std::filesystem::remove_all(root);
}
