// The broker's sandbox grows by exactly the folder sources' folders, read-only: one outside the
// home is readable; one in the home, above it or holding the broker's program is refused again
// here (config refused it first); one inside an agent's workspace opens that folder alone, every
// other entry of the workspace staying denied.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "sandbox/policy.h"

using namespace pine::sandbox;

namespace {

bool heldIn(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

struct FolderTree {
  std::string root, home, ws;
  FolderTree() {
    char tmpl[] = "/tmp/pine-broker-folders-XXXXXX";
    root = mkdtemp(tmpl);
    home = root + "/home";
    ws = home + "/agents/main/workspace";
    for (auto d : {home + "/data", ws + "/inbox", ws + "/deep/inbox", ws + "/deep/private", ws + "/notes",
                   root + "/bin", root + "/watched"})
      std::filesystem::create_directories(d);
    std::ofstream(home + "/.env") << "SECRET=1\n";
    std::ofstream(ws + "/notes.txt") << "mine\n";
    std::ofstream(ws + "/deep/diary.txt") << "mine\n";
    std::ofstream(root + "/bin/pine-broker") << "x";
  }
  ~FolderTree() { std::filesystem::remove_all(root); }
  BrokerPaths paths(std::vector<std::string> folders) const {
    BrokerPaths b;
    b.pineHome = home;
    b.program = root + "/bin/pine-broker";
    b.workspaces = {ws};
    b.watchedFolders = std::move(folders);
    return b;
  }
};

}  // namespace

TEST_CASE("broker sandbox: a watched folder outside the home is readable, not writable") {
  FolderTree t;
  Policy without = brokerPolicy(t.paths({}));
  CHECK_FALSE(heldIn(without.readable, t.root + "/watched"));
  Policy p = brokerPolicy(t.paths({t.root + "/watched"}));
  CHECK(heldIn(p.readable, t.root + "/watched"));
  CHECK_FALSE(heldIn(p.writable, t.root + "/watched"));
  CHECK(heldIn(p.denyRead, t.ws));  // the workspace stays closed when no folder lies in it
}

TEST_CASE("broker sandbox: pine's home, a folder in it or above it, or one holding the program is refused") {
  FolderTree t;
  for (const std::string& bad : {t.home, t.home + "/data", t.home + "/agents", t.root, std::string("/"), t.root + "/bin",
                                 t.ws})
    CHECK_THROWS_AS_MESSAGE(brokerPolicy(t.paths({bad})), PolicyError, bad);
}

TEST_CASE("broker sandbox: a folder inside a workspace opens that folder alone") {
  FolderTree t;
  Policy p = brokerPolicy(t.paths({t.ws + "/inbox", t.ws + "/deep/inbox"}));
  CHECK(heldIn(p.readable, t.ws + "/inbox"));
  CHECK(heldIn(p.readable, t.ws + "/deep/inbox"));
  CHECK_FALSE(heldIn(p.denyRead, t.ws));
  for (const std::string& closed : {t.ws + "/notes.txt", t.ws + "/notes", t.ws + "/deep/diary.txt",
                                    t.ws + "/deep/private"})
    CHECK_MESSAGE(heldIn(p.denyRead, closed), closed);
  CHECK_FALSE(heldIn(p.denyRead, t.ws + "/inbox"));
  CHECK_FALSE(heldIn(p.denyRead, t.ws + "/deep"));  // on the way: its other entries are denied instead
  CHECK(heldIn(p.denyRead, t.home + "/.env"));
}
