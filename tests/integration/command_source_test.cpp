// Command sources through the real process tree: the broker asks, pined starts the command in the
// owning agent's real sandbox (the one its shell gets), its output becomes events. Attacked from
// inside (pine's home, .env, another agent's workspace, the owner's home, writing outside the
// workspace, the network, pined's environment, instruction files), each beside its legitimate
// twin; the time limit kills a command and what it started; lines mode and a flood; an agent with
// sandbox: false gets no command run; `pinectl check` shows the command lines.
#include <doctest/doctest.h>
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

const char* kProbe = R"SH(t() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "ok:$name"; else echo "denied:$name"; fi; }
t read_env cat "$1/.env"
t read_config cat "$1/pine.yaml"
t read_database ls "$1/data"
t read_other_workspace cat "$2/private.txt"
t read_owner_home cat "$3"
t write_outside touch "$4/written-by-command"
t write_config touch "$1/agents/main/agent.yaml"
t write_agents_md sh -c 'echo planted >> AGENTS.md'
t write_memory_md sh -c 'echo planted >> MEMORY.md'
t network bash -c "exec 3<>/dev/tcp/127.0.0.1/$5"
t read_own_workspace cat notes.txt
t write_own_workspace sh -c 'echo fine > written.txt'
echo "notes:$(cat notes.txt)"
echo "env:$(env | sort | tr '\n' ' ')"
echo "pwd:$(pwd)"
)SH";

std::string yamlString(const std::string& s) { return nlohmann::json(s).dump(); }

std::vector<nlohmann::json> commandEventsOf(Pined& p, const std::string& name) {
  auto j = p.api("GET", "/v1/events?topic=command/" + name).json();
  std::vector<nlohmann::json> out;
  if (j.is_object() && j.contains("events"))
    for (auto& e : j["events"]) out.push_back(e);
  return out;
}

std::set<std::string> linesOf(const std::string& text) {
  std::set<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    out.insert(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("command sources: events from the agent's own sandbox, every way out refused, time limits, floods") {
  LINUX_BACKEND_ONLY();
  TempDir dir;
  const std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main", "other", "loose"});
  writeText(home + "/agents/loose/agent.yaml", "description: runs unconfined\nsandbox: false\n");
  writeText(home + "/agents/main/workspace/notes.txt", "own notes\n");
  writeText(home + "/agents/other/workspace/private.txt", "other's secret\n");
  writeText(home + "/.env", "SOME_TOKEN=env-value-3b9c1e7d2a\n");
  chmod((home + "/.env").c_str(), 0600);
  // A file in the owner's home (pined's uid's), which no agent may read.
  const std::string ownerFile = std::string(getpwuid(getuid())->pw_dir) + "/.pine-command-probe-" + std::to_string(getpid());
  writeText(ownerFile, "owner's\n");
  struct Cleanup {
    std::string f;
    ~Cleanup() { unlink(f.c_str()); }
  } cleanup{ownerFile};
  const std::string port = std::to_string(freeTcpPort());
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "sources:\n"
      << "  - {name: probe, type: command, start: always, command: [\"/bin/sh\", \"-c\", " << yamlString(kProbe)
      << ", probe, " << yamlString(home) << ", " << yamlString(home + "/agents/other/workspace") << ", "
      << yamlString(ownerFile) << ", " << yamlString(dir.path()) << ", \"" << port << "\"]}\n"
      << "  - {name: sleeper, type: command, start: always, timeoutSec: 2, command: [sh, -c, 'echo started; sleep 7777 & "
         "sleep 7778']}\n"
      << "  - {name: flood, type: command, mode: lines, start: always, command: [yes, flood]}\n"
      << "  - {name: unconfined, type: command, agent: loose, start: always, command: [id]}\n";
  setenv("PINE_CMD_TEST_MARKER", "pined-env-7d41c2", 1);  // pined inherits it; no command may see it
  const auto begun = std::chrono::steady_clock::now();     // the flood cannot have started before this
  Pined pined(home, {}, {});
  unsetenv("PINE_CMD_TEST_MARKER");

  // The probe: one event with what it could and could not do.
  REQUIRE_MESSAGE(waitUntil([&] { return !commandEventsOf(pined, "probe").empty(); }, 20s), tailOf(pined.stderrText(), 3000));
  auto probe = commandEventsOf(pined, "probe")[0];
  CHECK(probe["trust"] == "untrusted");
  const std::string out = probe["payload"]["stdout"];
  INFO(out);
  auto lines = linesOf(out);
  for (const char* refused : {"read_env", "read_config", "read_database", "read_other_workspace", "read_owner_home",
                              "write_outside", "write_config", "write_agents_md", "write_memory_md", "network"})
    CHECK_MESSAGE(lines.count(std::string("denied:") + refused), refused);
  // The legitimate twins: its own workspace, read and written.
  CHECK(lines.count("ok:read_own_workspace"));
  CHECK(lines.count("ok:write_own_workspace"));
  CHECK(lines.count("notes:own notes"));
  CHECK(readText(home + "/agents/main/workspace/written.txt") == "fine\n");
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/written-by-command"));
  CHECK_FALSE(contains(readText(home + "/agents/main/workspace/AGENTS.md"), "planted"));
  // The shell's environment, nothing of pined's.
  CHECK_FALSE(contains(out, "pined-env-7d41c2"));
  CHECK_FALSE(contains(out, "env-value-3b9c1e7d2a"));
  CHECK(contains(out, "HOME=" + home + "/sandbox/main "));
  CHECK(contains(out, "PATH=/usr/local/bin:/usr/bin:/bin "));
  CHECK(lines.count("pwd:" + home + "/agents/main/workspace"));
  auto started = audit(pined, "process.start");
  bool seen = false;
  for (auto& a : started)
    if (a.value("source", "") == "probe") {
      seen = true;
      CHECK(a["process"] == "command");
      CHECK(a["agent"] == "main");
      CHECK(a["network"] == "none");
    }
  CHECK(seen);

  // The time limit: killed after 2 s, and the sleep it left in the background with it.
  REQUIRE(waitUntil([&] { return !commandEventsOf(pined, "sleeper").empty(); }, 15s));
  auto slept = commandEventsOf(pined, "sleeper")[0]["payload"];
  CHECK(slept["timedOut"] == true);
  CHECK(slept["stdout"] == "started\n");
  CHECK(waitUntil([&] { return processesMentioning("sleep 7777").empty() && processesMentioning("sleep 7778").empty(); }, 5s));

  // A flood: bounded, and the drops reported; the other sources still got theirs (above).
  REQUIRE(waitUntil([&] { return contains(pined.stderrText(), "command source 'flood': dropped"); }, 20s));
  auto flood = pined.api("GET", "/v1/events?topic=command/flood&limit=10000").json()["events"].size();
  // At most the burst and 10 a second since pined started (yes prints millions a second).
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
  CHECK(flood >= 10);
  CHECK(flood <= 100 + 10 * secs);

  // sandbox: false: its shell does not run unconfined, nor does its command source.
  CHECK(waitUntil([&] { return contains(pined.stderrText(), "agent 'loose' has sandbox: false"); }, 10s));
  CHECK(commandEventsOf(pined, "unconfined").empty());

  // The owner sees every command line in `pinectl check`.
  auto check = run({binDir() + "/pinectl", "--home", home, "check"});
  CHECK(contains(check.out + check.err, "command source 'sleeper' runs `sh -c 'echo started; sleep 7777 & sleep 7778'`"));
  CHECK(pined.stop() == 0);
}

TEST_CASE("command sources: lines mode, each line an event, on either backend (the Seatbelt stand-in too)") {
  TempDir dir;
  const std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main", "helper"});
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "sources:\n"
      << "  - {name: ticker, type: command, mode: lines, agent: helper, start: always, command: [sh, -c, 'echo first; "
         "echo second; pwd; sleep 1000']}\n";
  Pined pined(home, {}, {});
  REQUIRE_MESSAGE(waitUntil([&] { return commandEventsOf(pined, "ticker").size() >= 3; }, 15s), tailOf(pined.stderrText(), 3000));
  std::set<std::string> ticks;
  for (auto& e : commandEventsOf(pined, "ticker")) ticks.insert(e["payload"]["line"].get<std::string>());
  // Its own agent's workspace is where it runs.
  CHECK(ticks == std::set<std::string>{"first", "second", home + "/agents/helper/workspace"});
  auto check = run({binDir() + "/pinectl", "--home", home, "check"});
  CHECK(contains(check.out + check.err, "command source 'ticker' runs `sh -c 'echo first; echo second; pwd; sleep 1000'` "
                                        "in the sandbox of agent 'helper', all the time"));
  CHECK(pined.stop() == 0);
  CHECK(processesMentioning("echo second; pwd; sleep 1000").empty());
}

TEST_CASE("command sources: a bad mode or a timeout past the interval is refused with the file and line") {
  TempDir dir;
  const std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "sources:\n  - name: c\n    type: command\n    command: [date]\n    mode: stream\n"
      << "  - name: d\n    type: command\n    command: [date]\n    intervalSec: 60\n    timeoutSec: 90\n"
      << "  - name: e\n    type: command\n    command: [date]\n    mode: lines\n    intervalSec: 60\n";
  auto c = run({binDir() + "/pinectl", "--home", home, "check"});
  CHECK(c.exitCode == 2);
  const std::string text = c.out + c.err;
  CHECK(contains(text, "pine.yaml:9:"));
  CHECK(contains(text, "expected interval or lines, got 'stream'"));
  CHECK(contains(text, "pine.yaml:14:"));
  CHECK(contains(text, "must be less than intervalSec (60)"));
  CHECK(contains(text, "pine.yaml:19:"));
  CHECK(contains(text, "'intervalSec' is for mode: interval"));
}

TEST_CASE("command sources: a broker names only configured command sources, and gets one process of each") {
  TempDir dir;
  const std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "sources:\n  - {name: waiter, type: command, mode: lines, command: [sleep, '4242']}\n"
      << "  - {name: hook, type: webhook, topic: in/hook, open: true}\n";
  Pined pined(home, {"--broker-program", testBinDir() + "/fixtures/test-broker"}, {}, false);
  auto ask = [&](const std::string& source) {
    const std::string result = home + "/data/command-result.json";
    unlink(result.c_str());
    writeText(home + "/data/egress-trigger.json.tmp", nlohmann::json{{"kind", "command"}, {"source", source}}.dump());
    std::filesystem::rename(home + "/data/egress-trigger.json.tmp", home + "/data/egress-trigger.json");
    REQUIRE_MESSAGE(waitUntil([&] { return access(result.c_str(), F_OK) == 0; }, 15s), tailOf(pined.stderrText(), 2000));
    return nlohmann::json::parse(readText(result));
  };
  // The legitimate use: a configured command source starts; a second start while it runs does not.
  auto r = ask("waiter");
  INFO(r.dump());
  CHECK(r["first"].is_number());
  CHECK(contains(r["second"].get<std::string>(), "still running: one at a time"));
  // Dropped by the broker: killed.
  CHECK(waitUntil([&] { return processesMentioning("sleep 4242").empty(); }, 5s));
  // Its place is free once pined has reaped it: the source can start again.
  CHECK(waitUntil([&] { return ask("waiter")["first"].is_number(); }, 10s));
  CHECK(waitUntil([&] { return processesMentioning("sleep 4242").empty(); }, 5s));
  // A name that is no command source, or none at all, runs nothing.
  for (const char* other : {"hook", "nosuch"}) {
    auto o = ask(other);
    CHECK(contains(o["first"].get<std::string>(), std::string("no command source named '") + other + "'"));
  }
  auto bad = ask("../../bin/sh");
  CHECK(contains(bad["first"].get<std::string>(), "bad source name"));
}
