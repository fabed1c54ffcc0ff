// The Seatbelt backend's start path, run here against the stand-in sandbox-exec
// (tests/fixtures/sandbox_exec_standin.cpp), which checks and records what it is given and
// enforces nothing: pined starts the broker, each worker and each egress process as
// `sandbox-exec -p PROFILE -D NAME=PATH ... -- PROGRAM`, with every path a parameter and fd 3
// passed through; and it fails closed at start when sandbox-exec is missing or refuses pine's
// profile. What the profile allows is tested in tests/seatbelt/; nothing here was run on a Mac.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

using namespace pine::test;
namespace fs = std::filesystem;

namespace {

std::vector<nlohmann::json> records(const std::string& log) {
  std::vector<nlohmann::json> out;
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    REQUIRE_MESSAGE(!j.is_discarded(), "not JSON: " << line);
    out.push_back(j);
  }
  return out;
}

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A private copy of the stand-in, so that its log (beside it) is this test's alone.
std::string standInCopy(const std::string& dir) {
  fs::create_directories(dir);
  std::string path = dir + "/sandbox-exec";
  fs::copy_file(testBinDir() + "/fixtures/sandbox-exec", path, fs::copy_options::overwrite_existing);
  chmod(path.c_str(), 0755);
  return path;
}

}  // namespace

TEST_CASE("Seatbelt backend: the broker and each worker start through sandbox-exec with pine's profile") {
  TempDir dir;
  const std::string home = dir.path() + "/home";
  const std::string standIn = standInCopy(dir.path() + "/bin");
  Pined pined(home, {"--sandbox-backend", "seatbelt", "--sandbox-exec", standIn});
  auto task = message(pined, "main", "hello from the seatbelt test");
  CHECK(task["state"] == "done");

  auto lines = records(dir.path() + "/bin/sandbox-exec.log");
  bool sawCheck = false, sawBroker = false, sawWorker = false;
  for (auto& r : lines) {
    CAPTURE(r.dump().substr(0, 400));
    CHECK_FALSE(r.contains("refused"));
    auto command = r["command"].get<std::vector<std::string>>();
    REQUIRE_FALSE(command.empty());
    const std::string profile = r["profile"];
    CHECK(profile.rfind("(version 1)\n(deny default)\n", 0) == 0);
    // sandbox-exec's own argv: -p and -D before "--", the program after it.
    auto argv = r["argv"].get<std::vector<std::string>>();
    CHECK(argv.at(0) == standIn);
    auto dashes = std::find(argv.begin(), argv.end(), "--");
    REQUIRE(dashes != argv.end());
    CHECK(std::vector<std::string>(dashes + 1, argv.end()) == command);
    for (auto& [name, value] : r["params"].items()) {
      CHECK(value.get<std::string>().rfind('/', 0) == 0);
      if (value.get<std::string>().size() > 1)  // "/" itself appears in every comment
        CHECK(profile.find(value.get<std::string>()) == std::string::npos);  // a parameter, never spliced in
    }
    if (command[0] == "/usr/bin/true") sawCheck = true;
    if (endsWith(command[0], "/pine-broker")) {
      sawBroker = true;
      bool homeParam = false;
      for (auto& [name, value] : r["params"].items()) homeParam |= endsWith(value.get<std::string>(), "/home");
      CHECK(homeParam);
    }
    if (endsWith(command[0], "/pine-worker")) {
      sawWorker = true;
      CHECK(std::find(command.begin(), command.end(), "--task") != command.end());
      bool workspace = false;
      for (auto& [name, value] : r["params"].items())
        workspace |= endsWith(value.get<std::string>(), "/agents/main/workspace");
      CHECK(workspace);
    }
  }
  CHECK_MESSAGE(sawCheck, "pined's start check did not run through sandbox-exec");
  CHECK_MESSAGE(sawBroker, "the broker did not start through sandbox-exec");
  CHECK_MESSAGE(sawWorker, "the worker did not start through sandbox-exec");
  CHECK(pined.auditEvents("sandbox.refused").empty());
}

TEST_CASE("Seatbelt backend fails closed: no sandbox-exec, or one that refuses pine's profile, starts nothing") {
  TempDir dir;
  const std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  auto pinedWith = [&](const std::string& sandboxExec) {
    return run({binDir() + "/pined", "--home", home, "--foreground", "--sandbox-backend", "seatbelt", "--sandbox-exec",
                sandboxExec});
  };
  auto missing = pinedWith(dir.path() + "/no-such-sandbox-exec");
  CHECK(missing.exitCode == 1);
  CHECK(contains(missing.err, "cannot be executed"));
  CHECK(contains(missing.err, "nothing is started unconfined"));

  // One that refuses every profile, as sandbox-exec does when it cannot compile one.
  const std::string refusing = dir.path() + "/refusing-sandbox-exec";
  writeText(refusing, "#!/bin/sh\necho 'sandbox-exec: syntax error in profile' >&2\nexit 65\n");
  chmod(refusing.c_str(), 0755);
  auto refused = pinedWith(refusing);
  CHECK(refused.exitCode == 1);
  CHECK(contains(refused.err, "syntax error in profile"));
  CHECK(contains(refused.err, "exit 65"));
  CHECK(processesMentioning(home).empty());  // no broker, no worker: nothing ran
  CHECK_FALSE(fs::exists(home + "/pine.sock"));

  // Both reasons are in the audit log, with the backend named.
  std::ifstream audit(home + "/data/logs/audit.jsonl");
  std::string line;
  int seen = 0;
  while (std::getline(audit, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("event", "") != "sandbox.refused") continue;
    CHECK(j["backend"] == "seatbelt");
    ++seen;
  }
  CHECK(seen == 2);

  // The twin: the stand-in that accepts it, and pined runs.
  Pined ok(home, {"--sandbox-backend", "seatbelt", "--sandbox-exec", standInCopy(dir.path() + "/bin")}, {});
  CHECK(ok.ctl({"status"}).exitCode == 0);
}
