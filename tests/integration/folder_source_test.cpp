// Folder sources with the real pined and broker in its real sandbox: the broker can read the
// configured folders (one outside the home, one in main's workspace) and nothing beside them
// (tried from inside by tests/fixtures/probe-broker); a new file becomes one event with its name,
// size and sha256, a link to .env becomes none; nothing is reported twice across a restart, what
// was added while pine was down is reported once; a folder added by the owner's reload is watched
// (pined restarts the broker so that its sandbox holds it).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

// sha256 of "hello\n"
const char* kHelloSha = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

std::vector<nlohmann::json> folderEvents(Pined& pined, const std::string& source) {
  std::vector<nlohmann::json> out;
  auto j = pined.api("GET", "/v1/events?topic=folder/" + source + "/%23&limit=1000").json();
  if (j.is_object() && j.contains("events"))
    for (auto& e : j["events"]) out.push_back(e);
  return out;
}

size_t countNamed(const std::vector<nlohmann::json>& events, const std::string& name) {
  size_t n = 0;
  for (auto& e : events) n += e["payload"].value("name", "") == name;
  return n;
}

void appendSources(const std::string& home, const std::string& entries) {
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") + "sources:\n" + entries);
}

}  // namespace

TEST_CASE("from inside the broker's sandbox: the configured folders are readable, their neighbours are not") {
  LINUX_BACKEND_ONLY();
  TempDir dir;
  std::string home = dir.path() + "/home";
  std::string watched = dir.path() + "/watched", beside = dir.path() + "/beside";
  std::string ws = home + "/agents/main/workspace";
  writeMinimalConfig(home, {"main"});
  for (auto& d : {watched, beside, ws + "/inbox", ws + "/private"}) std::filesystem::create_directories(d);
  writeText(watched + "/in.txt", "hello\n");
  writeText(beside + "/secret.txt", "not for the broker\n");
  writeText(ws + "/inbox/in.txt", "hello\n");
  writeText(ws + "/notes.txt", "the agent's own\n");
  writeText(ws + "/private/p.txt", "the agent's own\n");
  appendSources(home, "  - {name: drop, type: folder, path: " + watched + "}\n"
                      "  - {name: mine, type: folder, agent: main, path: " + ws + "/inbox}\n");
  writeText(home + "/probe-paths", watched + "/\n" + watched + "/in.txt\n" + beside + "/\n" + beside + "/secret.txt\n" +
                                       ws + "/inbox/\n" + ws + "/inbox/in.txt\n" + ws + "/\n" + ws + "/notes.txt\n" + ws +
                                       "/private/p.txt\n" + home + "/.env\n");
  writeText(home + "/.env", "PROBE_SECRET=never-read-by-the-broker-1234\n");
  chmod((home + "/.env").c_str(), 0600);
  Pined pined(home, {"--broker-program", testBinDir() + "/fixtures/probe-broker"}, {}, /*waitForApi=*/false);
  std::string path = home + "/data/probe-result.json";
  REQUIRE_MESSAGE(waitUntil([&] { return access(path.c_str(), F_OK) == 0; }, 10s), tailOf(pined.stderrText(), 4000));
  auto r = nlohmann::json::parse(readText(path));
  auto p = r["paths"];
  INFO(p.dump(2));
  // The legitimate use.
  CHECK(p[watched + "/"] == 0);
  CHECK(p[watched + "/in.txt"] == 0);
  if (geteuid() != 0) {  // as root the workspace is the agent's own user's, closed to the broker's user
    CHECK(p[ws + "/inbox/"] == 0);
    CHECK(p[ws + "/inbox/in.txt"] == 0);
  }
  // What it may not read: a folder beside the configured one, the rest of the workspace, .env.
  CHECK(p[beside + "/"] == EACCES);
  CHECK(p[beside + "/secret.txt"] == EACCES);
  // The workspace's other entries stay closed. (With a mount namespace its names can be listed:
  // docs/sources.md says so.)
  CHECK(p[ws + "/notes.txt"] != 0);
  CHECK(p[ws + "/private/p.txt"] != 0);
  CHECK(p[home + "/.env"] != 0);
}

TEST_CASE("folder source through the real broker: one event per new file, links not followed, none twice") {
  LINUX_BACKEND_ONLY();
  TempDir dir;
  std::string home = dir.path() + "/home";
  std::string watched = dir.path() + "/watched";
  writeMinimalConfig(home, {"main"});
  std::filesystem::create_directories(watched);
  writeText(home + "/.env", "PINE_TEST_SECRET=never-in-an-event-5678\n");
  chmod((home + "/.env").c_str(), 0600);
  writeText(watched + "/before.txt", "hello\n");
  std::filesystem::create_symlink(home + "/.env", watched + "/env-link");
  std::filesystem::create_symlink("/etc/passwd", watched + "/passwd");
  appendSources(home, "  - {name: drop, type: folder, path: " + watched + ", start: always, debounceMs: 100}\n");
  {
    Pined pined(home, {}, {});
    REQUIRE_MESSAGE(waitUntil([&] { return countNamed(folderEvents(pined, "drop"), "before.txt") == 1; }, 10s),
                    tailOf(pined.stderrText(), 4000));
    writeText(watched + "/new.txt", "hello\n");
    REQUIRE(waitUntil([&] { return countNamed(folderEvents(pined, "drop"), "new.txt") == 1; }, 10s));
    auto events = folderEvents(pined, "drop");
    for (auto& e : events) {
      CHECK(e["trust"] == "untrusted");
      CHECK(e["source"] == "drop");
      CHECK(e.dump().find("never-in-an-event") == std::string::npos);
      CHECK(e["payload"]["name"] != "env-link");
      CHECK(e["payload"]["name"] != "passwd");
    }
    for (auto& e : events)
      if (e["payload"]["name"] == "new.txt") {
        CHECK(e["topic"] == "folder/drop/new");
        CHECK(e["payload"]["size"] == 6);
        CHECK(e["payload"]["sha256"] == kHelloSha);
      }
    CHECK(events.size() == 2);
    // Each event is counted once (it was twice: the folder source counted too). The broker saves
    // its counts every 5 s.
    CHECK(waitUntil([&] { return sourceStatus(home, "drop").events >= 2; }, 10s));
    std::this_thread::sleep_for(6s);
    CHECK(sourceStatus(home, "drop").events == 2);
    CHECK(pined.stop() == 0);
  }
  writeText(watched + "/while-down.txt", "hello\n");
  Pined pined(home, {}, {});
  REQUIRE(waitUntil([&] { return countNamed(folderEvents(pined, "drop"), "while-down.txt") == 1; }, 10s));
  std::this_thread::sleep_for(1s);
  auto events = folderEvents(pined, "drop");
  CHECK(countNamed(events, "before.txt") == 1);
  CHECK(countNamed(events, "new.txt") == 1);
  CHECK(events.size() == 3);
  // Stopped before its next save (every 5 s): the count is saved as the broker stops.
  CHECK(pined.stop() == 0);
  CHECK(sourceStatus(home, "drop").events == 3);
}

TEST_CASE("a folder added by the owner's reload: pined restarts the broker, whose sandbox then holds it") {
  LINUX_BACKEND_ONLY();
  TempDir dir;
  std::string home = dir.path() + "/home";
  std::string first = dir.path() + "/first", second = dir.path() + "/second";
  writeMinimalConfig(home, {"main"});
  std::filesystem::create_directories(first);
  std::filesystem::create_directories(second);
  std::string base = readText(home + "/pine.yaml");
  appendSources(home, "  - {name: one, type: folder, path: " + first + ", start: always, debounceMs: 100}\n");
  Pined pined(home, {}, {});
  pid_t broker = pined.rolePid("broker");
  REQUIRE(broker > 0);
  // A reload that changes no folder keeps the broker.
  auto reload = pined.ctl({"reload"});
  CHECK_MESSAGE(reload.exitCode == 0, std::string(reload.out + reload.err));
  std::this_thread::sleep_for(500ms);
  CHECK(pined.rolePid("broker") == broker);
  // With a command source added by the same reload: it runs once, in the new broker (before, the
  // old one applied the reload and ran it too, a second before it was stopped).
  writeText(home + "/pine.yaml", base + "sources:\n  - {name: one, type: folder, path: " + first +
                                     ", start: always, debounceMs: 100}\n  - {name: two, type: folder, path: " + second +
                                     ", start: always, debounceMs: 100}\n"
                                     "  - {name: tick, type: command, mode: lines, command: [sh, -c, 'echo started; sleep 1000'], start: always}\n");
  reload = pined.ctl({"reload"});
  CHECK_MESSAGE(reload.exitCode == 0, std::string(reload.out + reload.err));
  CHECK_MESSAGE(contains(reload.out, "the broker restarts to apply it"), reload.out);
  // A second reload while that restart is on its way is the next broker's to apply as well.
  auto again = pined.ctl({"reload"});
  CHECK_MESSAGE(contains(again.out, "the broker restarts to apply it"), again.out);
  REQUIRE_MESSAGE(waitUntil([&] { pid_t now = pined.rolePid("broker"); return now > 0 && now != broker; }, 15s),
                  tailOf(pined.stderrText(), 4000));
  REQUIRE(waitUntil([&] { return pined.api("GET", "/v1/events?limit=1").status == 200; }, 15s));
  writeText(second + "/b.txt", "hello\n");
  CHECK_MESSAGE(waitUntil([&] { return countNamed(folderEvents(pined, "two"), "b.txt") == 1; }, 10s),
                tailOf(pined.stderrText(), 4000));
  bool audited = false;
  for (auto& e : pined.auditJson("broker.restart")) audited |= e.value("reason", "").find("folder") != std::string::npos;
  CHECK(audited);
  auto ticks = [&] {
    auto j = pined.api("GET", "/v1/events?topic=command/tick&limit=100").json();
    return j.is_object() && j.contains("events") ? j["events"].size() : size_t(0);
  };
  REQUIRE(waitUntil([&] { return ticks() >= 1; }, 20s));
  std::this_thread::sleep_for(3s);
  CHECK(ticks() == 1);
}

TEST_CASE("a folder removed and made again: the owner's reload restarts the broker, whose sandbox then holds the new one") {
  LINUX_BACKEND_ONLY();
  TempDir dir;
  std::string home = dir.path() + "/home", watched = dir.path() + "/in";
  writeMinimalConfig(home, {"main"});
  std::filesystem::create_directories(watched);
  appendSources(home, "  - {name: one, type: folder, path: " + watched + ", start: always, debounceMs: 100}\n");
  Pined pined(home, {}, {});
  pid_t broker = pined.rolePid("broker");
  REQUIRE(broker > 0);
  writeText(watched + "/a.txt", "hello\n");
  REQUIRE(waitUntil([&] { return countNamed(folderEvents(pined, "one"), "a.txt") == 1; }, 10s));
  std::filesystem::remove_all(watched);
  std::filesystem::create_directories(watched);
  writeText(watched + "/b.txt", "hello\n");
  // Before: the same paths, so the broker stayed, its sandbox holding the folder that went, and
  // b.txt never became an event, though the source's status line said a reload would mend it.
  auto reload = pined.ctl({"reload"});
  CHECK_MESSAGE(reload.exitCode == 0, std::string(reload.out + reload.err));
  REQUIRE_MESSAGE(waitUntil([&] { pid_t now = pined.rolePid("broker"); return now > 0 && now != broker; }, 15s),
                  tailOf(pined.stderrText(), 4000));
  CHECK_MESSAGE(waitUntil([&] { return countNamed(folderEvents(pined, "one"), "b.txt") == 1; }, 15s),
                tailOf(pined.stderrText(), 4000));
  bool audited = false;
  for (auto& e : pined.auditJson("broker.restart")) audited |= e.value("reason", "").find("made anew") != std::string::npos;
  CHECK(audited);
  // The twin: a reload with the folder as it is keeps the broker.
  broker = pined.rolePid("broker");
  reload = pined.ctl({"reload"});
  CHECK(reload.exitCode == 0);
  std::this_thread::sleep_for(1500ms);
  CHECK(pined.rolePid("broker") == broker);
}

TEST_CASE("as root, a folder in an agent's closed workspace: the broker still starts, the source says why it cannot run") {
  LINUX_BACKEND_ONLY();
  if (geteuid() != 0) return;  // only root's pined gives workspaces to users of their own
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  std::string base = readText(home + "/pine.yaml");
  std::string ws = home + "/agents/main/workspace", inbox = ws + "/inbox2";
  Pined pined(home, {}, {});
  // A workspace closed to others, as one the agent's own user keeps; a folder in it, as an
  // agent's add_source may name without a question.
  std::filesystem::create_directories(inbox);
  REQUIRE(chmod(ws.c_str(), 0700) == 0);
  pid_t broker = pined.rolePid("broker");
  appendSources(home, "  - {name: mine, type: folder, agent: main, path: " + inbox + ", start: always}\n");
  auto reload = pined.ctl({"reload"});
  CHECK_MESSAGE(reload.exitCode == 0, std::string(reload.out + reload.err));
  // Before, the broker's sandbox failed on that folder, and the broker never started again.
  REQUIRE_MESSAGE(waitUntil([&] { pid_t now = pined.rolePid("broker"); return now > 0 && now != broker; }, 15s),
                  tailOf(pined.stderrText(), 4000));
  REQUIRE_MESSAGE(waitUntil([&] { return pined.api("GET", "/v1/events?limit=1").status == 200; }, 15s),
                  tailOf(pined.stderrText(), 4000));
  nlohmann::json mine;
  REQUIRE(waitUntil([&] {
    auto j = pined.api("GET", "/v1/sources").json();
    if (j.is_object() && j.contains("sources"))
      for (auto& s : j["sources"])
        if (s.value("name", "") == "mine" && s.dump().find("cannot open") != std::string::npos) mine = s;
    return mine.is_object();
  }, 10s));
  CHECK_MESSAGE(mine.dump().find("the broker's own user must be able to read it") != std::string::npos, mine.dump());
  // And the rest goes on: the owner's reload still works.
  writeText(home + "/pine.yaml", base);
  reload = pined.ctl({"reload"});
  CHECK_MESSAGE(reload.exitCode == 0, std::string(reload.out + reload.err));
}
