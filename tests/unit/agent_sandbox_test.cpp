// What pined builds for a worker, whatever the broker asks for.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/unix_socket.h"
#include "sandbox/agent_sandbox.h"
#include "sandbox/linux/linux_host.h"

using namespace pine::sandbox;

namespace {
struct Home {
  std::string root;
  Home() {
    char tmpl[] = "/tmp/pine-asb-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    chmod(tmpl, 0711);
    root = std::string(tmpl) + "/home";
    std::filesystem::create_directories(root + "/agents/other/workspace");
    std::filesystem::create_directories(root + "/data");
    std::ofstream(root + "/.env") << "KEY=value\n";
  }
  ~Home() { std::filesystem::remove_all(root.substr(0, root.find_last_of('/'))); }
};
}  // namespace

TEST_CASE("grants that reach pine's home, .env, another agent or pine's programs are refused") {
  Home h;
  AgentSandboxes boxes(h.root, pine::programDir(), makeLinuxHost(probeKernel(), {}));
  for (const std::string& bad : std::vector<std::string>{h.root, h.root + "/.env", h.root + "/agents/other/workspace", h.root + "/agents/other",
                          h.root + "/data", h.root + "/agents/main/../other", pine::programDir(), std::string("/"),
                          h.root.substr(0, h.root.find_last_of('/'))}) {
    CAPTURE(bad);
    for (bool write : {false, true}) {
      Grants g;
      (write ? g.write : g.read).push_back(bad);
      CHECK_THROWS(boxes.prepare({"main", g, false, false, {}}));
    }
  }
  // A symlink in the workspace that points at the home does not launder it.
  boxes.prepare({"main", {}, false, false, {}});
  std::string link = h.root + "/agents/main/workspace/sneaky";
  REQUIRE(symlink((h.root + "/.env").c_str(), link.c_str()) == 0);
  Grants g;
  g.read.push_back(link);
  CHECK_THROWS(boxes.prepare({"main", g, false, false, {}}));
}

TEST_CASE("the legitimate twin: an ordinary folder can be granted, variables expand") {
  Home h;
  std::string extra = h.root.substr(0, h.root.find_last_of('/')) + "/project";
  std::filesystem::create_directories(extra);
  AgentSandboxes boxes(h.root, pine::programDir(), makeLinuxHost(probeKernel(), {}));
  Grants g;
  g.read.push_back(extra);
  g.write.push_back("${WORKSPACE}/out");
  auto box = boxes.prepare({"main", g, false, false, {}});
  CHECK(std::find(box.policy.readable.begin(), box.policy.readable.end(), extra) != box.policy.readable.end());
  CHECK(box.env.size() == 5);
  for (auto& e : box.env) CHECK((e.rfind("PATH=", 0) == 0 || e.rfind("LANG=", 0) == 0 || e.rfind("HOME=", 0) == 0 ||
                                 e.rfind("TMPDIR=", 0) == 0 || e.rfind("TERM=", 0) == 0));
  Grants unknown;
  unknown.read.push_back("${NOPE}/x");
  try {
    boxes.prepare({"main", unknown, false, false, {}});
    FAIL("no throw");
  } catch (std::exception& e) {
    CHECK(std::string(e.what()).find("NOPE") != std::string::npos);
  }
}

TEST_CASE("a kernel below the configured Landlock minimum refuses every task, saying how to fix it") {
  Home h;
  Probe p = probeKernel();
  LinuxOptions opts;
  opts.minLandlockAbi = p.landlockAbi + 1;
  AgentSandboxes boxes(h.root, pine::programDir(), makeLinuxHost(p, opts));
  try {
    boxes.prepare({"main", {}, false, false, {}});
    FAIL("no throw");
  } catch (std::exception& e) {
    CHECK(std::string(e.what()).find("Landlock") != std::string::npos);
  }
  Probe none = p;
  none.landlockAbi = 0;
  none.seccomp = false;
  AgentSandboxes nothing(h.root, pine::programDir(), makeLinuxHost(none, {}));
  CHECK_THROWS(nothing.prepare({"main", {}, false, false, {}}));
}
