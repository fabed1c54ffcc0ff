// Each agent's workers get a uid of their own when pined is root: never one an account,
// a group or another agent has, and the same one on every start (its workspace says which).
#include <doctest/doctest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "sandbox/linux/agent_ids.h"

namespace fs = std::filesystem;
using pine::sandbox::pickAgentIds;

namespace {

struct TempHome {
  std::string path;
  TempHome() {
    char tmpl[] = "/tmp/pine-agent-ids-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempHome() { fs::remove_all(path); }
  std::string workspace(const std::string& agent) const {
    fs::create_directories(path + "/agents/" + agent + "/workspace");
    return path + "/agents/" + agent + "/workspace";
  }
};

}  // namespace

TEST_CASE("agent ids: one per agent, kept by the workspace, never another agent's") {
  if (geteuid() != 0) {
    MESSAGE("skipped: giving a folder to another uid needs root");
    return;
  }
  TempHome h;
  const uid_t first = 60980, last = 60989;
  auto a = pickAgentIds(h.path, "a", first, last);
  CHECK(a.uid >= first);
  CHECK(a.uid <= last);
  CHECK(a.gid == a.uid);
  REQUIRE(chown(h.workspace("a").c_str(), a.uid, a.gid) == 0);
  auto b = pickAgentIds(h.path, "b", first, last);
  CHECK(b.uid != a.uid);
  REQUIRE(chown(h.workspace("b").c_str(), b.uid, b.gid) == 0);
  // Asked again (another start of pined, or pinectl), each keeps its own.
  CHECK(pickAgentIds(h.path, "a", first, last).uid == a.uid);
  CHECK(pickAgentIds(h.path, "b", first, last).uid == b.uid);
  // A workspace from before, owned by the old shared uid, gets an id of the range.
  REQUIRE(chown(h.workspace("c").c_str(), 65534, 65534) == 0);
  auto c = pickAgentIds(h.path, "c", first, last);
  CHECK(c.uid != 65534);
  CHECK(c.uid != a.uid);
  CHECK(c.uid != b.uid);
  // Another agent's id is never taken over, even if its owner was copied by hand.
  REQUIRE(chown(h.workspace("d").c_str(), a.uid, a.gid) == 0);
  CHECK(pickAgentIds(h.path, "d", first, last).uid != a.uid);
}

TEST_CASE("agent ids: an id an account has is skipped; a full or empty range says what to change") {
  TempHome h;
  REQUIRE(getpwuid(65534) != nullptr);  // nobody, as on every Debian
  auto ids = pickAgentIds(h.path, "a", 65534, 65535);
  CHECK(ids.uid == 65535);
  CHECK_THROWS_WITH_AS(pickAgentIds(h.path, "a", 65534, 65534), doctest::Contains("--worker-ids"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(pickAgentIds(h.path, "a", 0, 10), doctest::Contains("starts at 0"), std::runtime_error);
  CHECK_THROWS_WITH_AS(pickAgentIds(h.path, "a", 10, 5), doctest::Contains("is empty"), std::runtime_error);
}
