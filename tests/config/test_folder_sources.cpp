// A folder source's path: an existing, canonical folder outside pine's home (or inside the
// workspace of the source's own agent); pine's home, its .env, another agent's workspace, a folder
// holding the home, a link and a missing folder are refused with file:line; `check` names each
// folder source outside a workspace.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>

#include "config/check.h"
#include "config/folder_check.h"
#include "helpers.h"

using namespace pine::config;
using namespace pine::config::test;

namespace {

struct Outside {  // a folder beside the home, not in it
  std::string path;
  explicit Outside(const TempHome& h) : path(h.root + "-watched") { std::filesystem::create_directories(path); }
  ~Outside() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string withSource(const std::string& entry) {
  return "defaults: {model: demo}\nsources:\n  - " + entry + "\n";
}

}  // namespace

TEST_CASE("folder sources: a folder outside the home loads; its rules hold at file:line") {
  TempHome h;
  Outside out(h);
  std::filesystem::create_directories(h.path("agents/main/workspace/inbox"));
  std::filesystem::create_directories(h.path("agents/scout/workspace/inbox"));
  h.write("agents/scout/agent.yaml", "description: scout\n");
  std::filesystem::create_symlink(out.path, h.root + "-link");

  SUBCASE("legitimate: outside the home, and inside the own agent's workspace") {
    h.write("pine.yaml", withSource("{name: drop, type: folder, path: " + out.path + ", recursive: true, debounceMs: 250}") +
                             "  - {name: mine, type: folder, agent: main, path: " + h.path("agents/main/workspace/inbox") +
                             "}\n");
    auto r = h.load();
    REQUIRE_MESSAGE(r.ok(), dump(r.errors));
    CHECK(r.home->pine.sources[0].debounceMs == 250);
    CHECK(r.home->pine.sources[0].recursive);
    auto folders = watchedFolders(*r.home);
    CHECK(folders.size() == 2);
    CHECK(std::find(folders.begin(), folders.end(), out.path) != folders.end());
    CHECK(std::find(folders.begin(), folders.end(), h.path("agents/main/workspace/inbox")) != folders.end());
  }
  struct Case {
    const char* what;
    std::string path;
    std::string agent;
    const char* message;
  };
  std::vector<Case> cases = {
      {"pine's home", h.root, "", "in pine's home"},
      {"pine's .env", h.path(".env"), "", "in pine's home"},
      {"data/", h.path("data"), "main", "in pine's home"},
      {"another agent's workspace", h.path("agents/scout/workspace/inbox"), "main", "in pine's home"},
      {"a workspace for a source of all agents", h.path("agents/main/workspace/inbox"), "", "in pine's home"},
      {"a folder holding the home", std::filesystem::path(h.root).parent_path().string(), "", "contains pine's home"},
      {"/", "/", "", "whole file system"},
      {"relative", "inbox", "", "expected an absolute path"},
      {"~", "~/inbox", "", "'~' is not expanded"},
      {"..", out.path + "/../x", "", "canonical path"},
      {"missing", out.path + "/nope", "", "create the folder first"},
      {"a link", h.root + "-link", "", "leads through a link"},
      {"a file", h.root + "-file", "", "is not a folder"},
  };
  std::ofstream(h.root + "-file") << "x";
  for (auto& c : cases) {
    CAPTURE(c.what);
    std::string agent = c.agent.empty() ? "" : ", agent: " + c.agent;
    h.write("pine.yaml", "defaults: {model: demo}\nsources:\n  - {name: drop, type: folder, path: \"" + c.path + "\"" +
                             agent + "}\n");
    auto r = h.load();
    CHECK_FALSE(r.ok());
    auto* e = findError(r.errors, "sources[0].path", c.message);
    CHECK_MESSAGE(e, dump(r.errors));
    if (e) CHECK(e->line == 3);
  }
  std::filesystem::remove(h.root + "-link");
  std::filesystem::remove(h.root + "-file");
}

TEST_CASE("folder sources: debounceMs is 50 to 600000") {
  TempHome h;
  Outside out(h);
  h.write("pine.yaml", withSource("{name: drop, type: folder, path: " + out.path + ", debounceMs: 10}"));
  auto r = h.load();
  CHECK(findError(r.errors, "sources[0].debounceMs"));
}

TEST_CASE("folder sources: check names each folder source outside a workspace, not one inside its own") {
  TempHome h;
  Outside out(h);
  std::filesystem::create_directories(h.path("agents/main/workspace/inbox"));
  h.write("pine.yaml", withSource("{name: drop, type: folder, path: " + out.path + "}") +
                           "  - {name: mine, type: folder, agent: main, path: " + h.path("agents/main/workspace/inbox") +
                           "}\n");
  auto r = h.load();
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  auto notes = securityNotes(*r.home, gatherHomeFacts(*r.home, "full"));
  int named = 0;
  for (auto& n : notes) {
    if (n.message.find("folder source 'drop'") != std::string::npos) {
      ++named;
      CHECK(n.message.find(out.path) != std::string::npos);
      CHECK(n.keyPath == "sources[0].path");
    }
    CHECK(n.message.find("folder source 'mine'") == std::string::npos);
  }
  CHECK(named == 1);
}
