// The broker's policy (sandbox/policy.h brokerPolicy): what it may read, write,
// make and run, decided by the same code as a worker's.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "sandbox/policy.h"

using namespace pine::sandbox;

namespace {

bool holds(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

struct BrokerHome {
  std::string root, home, prog;
  BrokerHome() {
    char tmpl[] = "/tmp/pine-broker-policy-XXXXXX";
    root = mkdtemp(tmpl);
    home = root + "/home";
    prog = root + "/bin";
    for (auto d : {home + "/data", home + "/agents/main/workspace", home + "/sandbox", prog})
      std::filesystem::create_directories(d);
    std::ofstream(home + "/.env") << "SECRET=1\n";
    std::ofstream(prog + "/pine-broker") << "#!/bin/false\n";
  }
  ~BrokerHome() { std::filesystem::remove_all(root); }
  BrokerPaths paths() const {
    BrokerPaths b;
    b.pineHome = home;
    b.program = prog + "/pine-broker";
    b.loader = "";
    b.workspaces = {home + "/agents/main/workspace"};
    b.listenPorts = {7433, 7433};
    b.connectPorts = {8883, 1883};
    return b;
  }
};

}  // namespace

TEST_CASE("the broker reads the home but .env, writes data/ only, runs nothing but its program") {
  BrokerHome h;
  Policy p = brokerPolicy(h.paths());
  CHECK(holds(p.readable, h.home));
  CHECK(p.writable.size() <= 2);
  CHECK(holds(p.writable, h.home + "/data"));
  for (auto& w : p.writable) CHECK((w == h.home + "/data" || w == "/dev/null"));
  for (const char* closed : {"/.env", "/pined.sock", "/sandbox", "/checkpoints", "/agents/main/workspace"})
    CHECK_MESSAGE(holds(p.denyRead, h.home + closed), closed);
  CHECK(holds(p.denyRead, "/etc/shadow") == (access("/etc/shadow", F_OK) == 0));
  CHECK(p.execOnly);
  CHECK(p.executable == std::vector<std::string>{h.prog + "/pine-broker"});
  CHECK(p.listenSockets.empty());  // pined listens on pine.sock and hands connections over
  CHECK(p.unixSockets);
  CHECK(p.network == Network::All);
  CHECK(p.tcpPortsOnly);
  CHECK(p.tcpBind == std::vector<int>{7433});
  CHECK(p.tcpConnect == std::vector<int>{1883, 8883});
  // No folder of programs is readable, so the loader (executable for the broker's own start) finds none.
  for (const char* bin : {"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin"}) {
    CAPTURE(bin);
    for (auto& r : p.readable) CHECK_FALSE(pathWithin(r, bin));
  }
}

TEST_CASE("a broker policy that would open too much is refused, saying why") {
  BrokerHome h;
  BrokerPaths inside = h.paths();
  inside.program = h.home + "/data/pine-broker";  // a program the broker could write
  CHECK_THROWS_WITH_AS(brokerPolicy(inside), doctest::Contains("inside pine's home"), PolicyError);
  BrokerPaths port = h.paths();
  port.listenPorts = {0};
  CHECK_THROWS_WITH_AS(brokerPolicy(port), doctest::Contains("not 1 to 65535"), PolicyError);
  BrokerPaths wide = h.paths();
  wide.otherReadable = {h.root};  // holds the home, .env with it
  CHECK_THROWS_WITH_AS(brokerPolicy(wide), doctest::Contains("contains pine's home"), PolicyError);
  BrokerPaths none = h.paths();
  none.program = "";
  CHECK_THROWS_AS(brokerPolicy(none), PolicyError);
  // The legitimate twin: a file outside the home is added as readable.
  BrokerPaths script = h.paths();
  std::ofstream(h.root + "/replies.yaml") << "replies: []\n";
  script.otherReadable = {h.root + "/replies.yaml"};
  CHECK(holds(brokerPolicy(script).readable, h.root + "/replies.yaml"));
}

TEST_CASE("the program loader is read from the ELF file; anything else is refused") {
#ifndef __APPLE__
  std::string ld = elfInterpreter("/bin/sh");
  CHECK(ld.find("ld-linux") != std::string::npos);
  CHECK(access(ld.c_str(), X_OK) == 0);
  CHECK(ld == canonicalPath(ld));
  BrokerHome h;
  CHECK_THROWS_WITH_AS(elfInterpreter(h.prog + "/pine-broker"), doctest::Contains("not an ELF file"), PolicyError);
  CHECK_THROWS_AS(elfInterpreter(h.root + "/missing"), PolicyError);
  BrokerPaths b = h.paths();
  b.loader = ld;
  Policy p = brokerPolicy(b);
  CHECK(holds(p.executable, ld));
  CHECK(p.executable.size() == 2);
#endif
}

TEST_CASE("the broker's environment: PATH, LANG and its temporary folder in data/, nothing else") {
  auto env = brokerEnvironment("/home/x/.pine");
  CHECK(env.size() == 3);
  CHECK(holds(env, "TMPDIR=/home/x/.pine/data/tmp"));
  CHECK(holds(env, "LANG=C.UTF-8"));
}
