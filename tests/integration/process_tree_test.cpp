// The real process tree in a temporary home: start, tasks, crashes, stop.
#include <doctest/doctest.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

static unsigned modeOf(const std::string& path) {
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

TEST_CASE("pined lays out a private home and answers pinectl status") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  if (geteuid() == 0) {
    // As root, the broker's own uid owns data/ and its own group (no account's) may walk through the
    // home, never write in it: pined listens on pine.sock for it.
    struct stat st, data;
    REQUIRE(stat(home.c_str(), &st) == 0);
    REQUIRE(stat((home + "/data").c_str(), &data) == 0);
    CHECK((st.st_mode & 07777) == 0710);
    CHECK(st.st_gid == data.st_uid);
    CHECK(data.st_uid != 0);
  } else {
    CHECK(modeOf(home) == 0700);
  }
  CHECK(modeOf(home + "/data") == 0700);
  CHECK(modeOf(home + "/data/logs") == 0700);
  CHECK(modeOf(home + "/data/http-token") == 0600);
  CHECK(modeOf(home + "/pine.sock") == 0600);

  auto r = pined.ctl({"status", "--json"});
  REQUIRE(r.exitCode == 0);
  auto j = nlohmann::json::parse(r.out);
  std::set<std::string> roles;
  for (auto& p : j["processes"]) roles.insert(p["role"].get<std::string>());
  CHECK(roles == std::set<std::string>{"supervisor", "broker"});
  CHECK(j["api"]["unix"] == home + "/pine.sock");
  CHECK(j["processes"][0]["pid"] == pined.pid());

  auto text = pined.ctl({"status"});
  CHECK(text.out.find("supervisor") != std::string::npos);
  CHECK(text.out.find("broker") != std::string::npos);

  // Each process has its own log; the audit log says both started.
  CHECK(access((home + "/data/logs/pined.log").c_str(), F_OK) == 0);
  CHECK(access((home + "/data/logs/broker.log").c_str(), F_OK) == 0);
  CHECK(pined.auditEvents("process.start").size() >= 2);
  auto logs = pined.ctl({"logs", "--json"});
  CHECK(logs.exitCode == 0);
  std::istringstream lines(logs.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    CHECK_FALSE(nlohmann::json::parse(line, nullptr, false).is_discarded());
    ++n;
  }
  CHECK(n >= 2);
  auto readable = pined.ctl({"logs"});
  CHECK(readable.out.find("process.start") != std::string::npos);
}

TEST_CASE("pinectl without a running pine says what to do") {
  TempDir dir;
  auto r = run({binDir() + "/pinectl", "--home", dir.path() + "/nohome", "status"});
  CHECK(r.exitCode == 1);
  CHECK_MESSAGE(r.err.find("there is no pine home at " + dir.path() + "/nohome") != std::string::npos, r.err);
  // A home pined has run on, with pined stopped: the token is there, the socket is not.
  writeMinimalConfig(dir.path() + "/home", {"main"});
  writeText(dir.path() + "/home/data/http-token", std::string(64, 'a') + "\n");
  auto down = run({binDir() + "/pinectl", "--home", dir.path() + "/home", "status"});
  CHECK(down.exitCode == 1);
  CHECK_MESSAGE(down.err.find("pined is not running on " + dir.path() + "/home") != std::string::npos, down.err);
  auto secret = run({binDir() + "/pinectl", "--home", dir.path() + "/home", "secret", "list"});
  CHECK(secret.exitCode == 1);
  CHECK_MESSAGE(secret.err.find("pined is not running on") != std::string::npos, secret.err);
}

TEST_CASE("a task runs in a worker that is gone afterwards, and the audit log tells the story") {
  TempDir dir;
  Pined pined(dir.path() + "/home");
  auto r = pined.ctl({"send", "main", "hello worker"});
  REQUIRE(r.exitCode == 0);
  // The script model's fall-through reply, through a sandboxed worker's real OpenAI client path.
  CHECK(r.out.find("offline demo model") != std::string::npos);
  REQUIRE(pined.auditEvents("task.start").size() == 1);
  auto end = nlohmann::json::parse(pined.auditEvents("task.end").at(0));
  CHECK(end["state"] == "done");
  CHECK(waitUntil([&] { return pined.rolePid("worker") == 0; }, 3s));
  // Just the broker, once pine-checkpoint has recorded the workspace as the worker left it.
  CHECK(waitUntil([&] { return childrenOf(pined.pid()).size() == 1; }, 5s));
  auto start = nlohmann::json::parse(pined.auditEvents("task.start").at(0));
  CHECK(start["sandbox"].get<std::string>().rfind(seatbeltStandIn() ? "seatbelt:full" : "linux:", 0) == 0);
  CHECK(pined.auditEvents("sandbox.probe").size() == 1);
}

TEST_CASE("bad requests get clear errors") {
  TempDir dir;
  Pined pined(dir.path() + "/home");
  auto r = pined.ctl({"send", "../etc", "x"});
  CHECK(r.exitCode == 1);
  CHECK(r.err.find("agent ids are") != std::string::npos);
}

TEST_CASE("kill -9 of the broker: a new broker answers and the restart is audited") {
  TempDir dir;
  Pined pined(dir.path() + "/home");
  pid_t broker = pined.rolePid("broker");
  REQUIRE(broker > 0);
  REQUIRE(kill(broker, SIGKILL) == 0);
  auto t0 = std::chrono::steady_clock::now();
  // How fast is bench/'s to say (no timed assertion here): the bound only ends a hung test.
  bool back = waitUntil([&] { pid_t b = pined.rolePid("broker"); return b > 0 && b != broker; }, 30s);
  CHECK_MESSAGE(back, "no new broker within 30 s");
  auto took = std::chrono::steady_clock::now() - t0;
  MESSAGE("broker back after " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms");
  auto j = nlohmann::json::parse(pined.ctl({"status", "--json"}).out);
  for (auto& p : j["processes"])
    if (p["role"] == "broker") CHECK(p["restarts"] == 1);
  CHECK(pined.auditEvents("process.restart").size() == 1);
  bool sawKill = false;
  for (auto& l : pined.auditEvents("process.exit"))
    if (nlohmann::json::parse(l).value("signal", 0) == SIGKILL) sawKill = true;
  CHECK(sawKill);
  CHECK(pined.ctl({"send", "main", "after restart"}).exitCode == 0);
}

TEST_CASE("kill -9 of a worker fails its task and leaves nothing behind") {
  TempDir dir;
  Pined pined(dir.path() + "/home", {"--worker-program", testBinDir() + "/fixtures/test-worker"}, {"slow"});
  auto started = pined.ctl({"send", "--no-wait", "slow", "wait for me"});
  REQUIRE(started.exitCode == 0);
  pid_t worker = 0;
  REQUIRE(waitUntil([&] { return (worker = pined.rolePid("worker")) > 0; }, 3s));
  std::vector<pid_t> grandchildren;
  REQUIRE(waitUntil([&] { return !(grandchildren = childrenOf(worker)).empty(); }, 3s));
  REQUIRE(kill(worker, SIGKILL) == 0);
  CHECK(waitUntil([&] { return pined.auditEvents("task.end").size() == 1; }, 3s));
  auto end = nlohmann::json::parse(pined.auditEvents("task.end").at(0));
  CHECK(end["state"] == "failed");
  CHECK(end["error"].get<std::string>().find("before answering") != std::string::npos);
  CHECK(waitUntil([&] { return !alive(worker); }, 2s));
  for (pid_t g : grandchildren) CHECK_MESSAGE(waitUntil([&] { return !alive(g); }, 2s), "orphan " << g);
  auto tasks = nlohmann::json::parse(pined.ctl({"tasks", "--json"}).out);
  CHECK(tasks["tasks"][0]["state"] == "failed");
  CHECK(pined.rolePid("broker") > 0);
}

TEST_CASE("SIGTERM to pined: it exits cleanly and every process is gone, running workers included") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home, {"--worker-program", testBinDir() + "/fixtures/test-worker"}, {"slow"});
  REQUIRE(pined.ctl({"send", "--no-wait", "slow", "x"}).exitCode == 0);
  pid_t worker = 0;
  REQUIRE(waitUntil([&] { return (worker = pined.rolePid("worker")) > 0; }, 3s));
  std::vector<pid_t> grandchildren;
  REQUIRE(waitUntil([&] { return !(grandchildren = childrenOf(worker)).empty(); }, 3s));
  pid_t broker = pined.rolePid("broker");
  int status = pined.stop(20000ms);  // a bound for a hung pined, not a speed promise
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  for (pid_t p : std::vector<pid_t>{broker, worker}) CHECK_FALSE(alive(p));
  for (pid_t g : grandchildren) CHECK(waitUntil([&] { return !alive(g); }, 5s));
  CHECK(processesMentioning(home).empty());
  CHECK(access((home + "/pine.sock").c_str(), F_OK) != 0);
}

TEST_CASE("SIGHUP reopens the logs and is audited") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  std::string log = home + "/data/logs/pined.log";
  REQUIRE(rename(log.c_str(), (log + ".1").c_str()) == 0);
  REQUIRE(kill(pined.pid(), SIGHUP) == 0);
  CHECK(waitUntil([&] { return access(log.c_str(), F_OK) == 0; }, 2s));
  CHECK(waitUntil([&] { return pined.auditEvents("config.reload").size() == 1; }, 2s));
  CHECK(pined.ctl({"status"}).exitCode == 0);
}

TEST_CASE("a second pined on the same home is refused and names the first") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  auto r = run({binDir() + "/pined", "--home", home, "--foreground"});
  CHECK(r.exitCode == 1);
  CHECK(r.err.find("another pined already runs") != std::string::npos);
  CHECK(r.err.find(std::to_string(pined.pid())) != std::string::npos);
  CHECK(pined.ctl({"status"}).exitCode == 0);
}

TEST_CASE("the control socket refuses requests without the token or from a browser") {
  TempDir dir;
  Pined pined(dir.path() + "/home");
  std::string sock = pined.home() + "/pine.sock";
  auto curl = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                     "--unix-socket", sock};
    for (auto& e : extra) argv.push_back(e);
    return run(argv).out;
  };
  std::string token = pine::test::run({"/bin/cat", pined.home() + "/data/http-token"}).out;
  token.erase(token.find_last_not_of("\n") + 1);
  CHECK(curl({"http://localhost/health"}) == "200");
  CHECK(curl({"http://localhost/v1/status"}) == "401");
  CHECK(curl({"-H", "Authorization: Bearer wrong", "http://localhost/v1/status"}) == "401");
  CHECK(curl({"-H", "Authorization: Bearer " + token, "http://localhost/v1/status"}) == "200");
  CHECK(curl({"-H", "Authorization: Bearer " + token, "-H", "Origin: http://evil.example",
              "http://localhost/v1/status"}) == "403");
  CHECK(curl({"-H", "Authorization: Bearer " + token, "http://localhost/v1/status?token=" + token}) == "400");
  CHECK(curl({"-H", "Authorization: Bearer " + token, "-H", "Content-Type: application/json", "-d", "not json",
              "http://localhost/v1/agents/main/messages"}) == "400");
  // curl's -d alone says application/x-www-form-urlencoded: the API takes JSON only.
  CHECK(curl({"-H", "Authorization: Bearer " + token, "-d", "{}", "http://localhost/v1/agents/main/messages"}) == "415");
}

TEST_CASE("no usable sandbox: the task is refused with what to fix, never run unconfined") {
  TempDir dir;
  std::string parent = dir.path() + "/private";
  REQUIRE(mkdir(parent.c_str(), 0700) == 0);  // as root, the worker uid cannot walk through this
  if (geteuid() != 0) return;                 // only root drops workers to another uid
  // The broker, which runs as its own uid and group when pined is root, may walk through; workers may not.
  unsigned brokerId = 61000;  // outside the default ranges, which other tests' brokers and workers may hold
  while (getpwuid(brokerId) || getgrgid(brokerId)) ++brokerId;
  REQUIRE(chown(parent.c_str(), 0, brokerId) == 0);
  REQUIRE(chmod(parent.c_str(), 0710) == 0);
  Pined pined(parent + "/home", {"--broker-ids", std::to_string(brokerId) + "-" + std::to_string(brokerId)});
  auto r = pined.ctl({"send", "main", "hello"});
  CHECK(r.exitCode == 1);
  CHECK(r.err.find("chmod o+x") != std::string::npos);
  CHECK(pined.auditEvents("sandbox.refused").size() == 1);
  CHECK(pined.auditEvents("task.start").empty());
}

TEST_CASE("as root each agent's workers get a uid of their own from --worker-ids, the same after a restart") {
  if (geteuid() != 0) {
    MESSAGE("skipped: only a root pined gives workers other uids");
    return;
  }
  TempDir dir;
  const std::string home = dir.path() + "/home";
  auto ownerOf = [](const std::string& path) {
    struct stat st;
    REQUIRE(lstat(path.c_str(), &st) == 0);
    return st.st_uid;
  };
  const std::vector<std::string> args = {"--worker-ids", "60950-60959"};
  uid_t mainUid = 0, otherUid = 0;
  {
    Pined pined(home, args, {"main", "other"});
    REQUIRE(pined.ctl({"send", "main", "hello"}).exitCode == 0);
    REQUIRE(pined.ctl({"send", "other", "hello"}).exitCode == 0);
    mainUid = ownerOf(home + "/agents/main/workspace");
    otherUid = ownerOf(home + "/agents/other/workspace");
    CHECK(mainUid >= 60950);
    CHECK(mainUid <= 60959);
    CHECK(otherUid >= 60950);
    CHECK(otherUid <= 60959);
    CHECK(mainUid != otherUid);
    CHECK(ownerOf(home + "/sandbox/main") == mainUid);
    CHECK(ownerOf(home + "/sandbox/other/tmp") == otherUid);
    CHECK(pined.stop() == 0);
  }
  Pined again(home, args, {"main", "other"});
  REQUIRE(again.ctl({"send", "other", "hello again"}).exitCode == 0);
  CHECK(ownerOf(home + "/agents/other/workspace") == otherUid);
  CHECK(ownerOf(home + "/agents/main/workspace") == mainUid);
  // Ranges that overlap are refused before anything starts.
  auto r = run({binDir() + "/pined", "--home", dir.path() + "/other-home", "--foreground", "--broker-ids",
                "60950-60960", "--worker-ids", "60955-60999"});
  CHECK(r.exitCode == 2);
  CHECK(contains(r.err, "overlap"));
}

TEST_CASE("a task for an agent that is not configured is refused and says where to create it") {
  TempDir dir;
  Pined pined(dir.path() + "/home");
  auto r = pined.ctl({"send", "ghost", "hello"});
  CHECK(r.exitCode == 1);
  CHECK(r.err.find("agents/ghost/agent.yaml") != std::string::npos);
}

TEST_CASE("an invalid configuration stops pined from starting, with file:line:column") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  std::ofstream(home + "/pine.yaml") << "defaults:\n  model: demo\nlimitz:\n  queuePerAgent: 3\n";
  auto r = run({binDir() + "/pined", "--home", home, "--foreground"});
  CHECK(r.exitCode == 2);
  CHECK(r.err.find("pine.yaml:3:1") != std::string::npos);
  CHECK(r.err.find("limits") != std::string::npos);  // did you mean
  CHECK(processesMentioning(home).empty());
}

TEST_CASE("a bad edit never replaces the configuration in force: SIGHUP and pinectl reload say why") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  std::ofstream(home + "/agents/main/agent.yaml") << "description: x\nmode: sideways\n";
  auto r = pined.ctl({"reload"});
  CHECK(r.exitCode == 2);
  CHECK(r.err.find("agent.yaml:2:7") != std::string::npos);
  CHECK(r.err.find("previous one stays") != std::string::npos);
  REQUIRE(kill(pined.pid(), SIGHUP) == 0);
  CHECK(waitUntil([&] { return pined.auditEvents("config.reload").size() == 2; }, 2s));
  for (auto& line : pined.auditEvents("config.reload")) CHECK(nlohmann::json::parse(line)["ok"] == false);
  // The old configuration still runs tasks.
  CHECK(pined.ctl({"send", "main", "still here"}).exitCode == 0);
  std::ofstream(home + "/agents/main/agent.yaml") << "description: fixed\nmode: manual\n";
  CHECK(pined.ctl({"reload"}).exitCode == 0);
}

TEST_CASE("pinectl check on the example home, and a note that goes away once fixed") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  std::filesystem::copy(sourceDir() + "/config/examples/home", home, std::filesystem::copy_options::recursive);
  chmod(home.c_str(), 0700);
  for (auto f : {"/pine.yaml", "/models.yaml"}) chmod((home + f).c_str(), 0600);
  auto clean = run({binDir() + "/pinectl", "--home", home, "check"});
  CHECK(clean.exitCode == 0);
  CHECK(clean.out.find("No security notes") != std::string::npos);
  chmod((home + "/pine.yaml").c_str(), 0644);
  auto noted = run({binDir() + "/pinectl", "--home", home, "check"});
  CHECK(noted.exitCode == 1);
  CHECK(noted.out.find("pine.yaml") != std::string::npos);
  std::ofstream(home + "/pine.yaml", std::ios::app) << "bogus: 1\n";
  CHECK(run({binDir() + "/pinectl", "--home", home, "check"}).exitCode == 2);
}

TEST_CASE("pinectl secret set: pined writes .env (mode 600); the value is in no log, audit line or environment") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  const std::string value = "zq-Secret-Value-7f3a9b2c41";
  auto r = pined.ctl({"secret", "set", "TEST_TOKEN"}, value + "\n");
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(modeOf(home + "/.env") == 0600);
  std::ifstream env(home + "/.env");
  std::stringstream ss;
  ss << env.rdbuf();
  CHECK(ss.str().find("TEST_TOKEN=" + value) != std::string::npos);
  CHECK(pined.ctl({"secret", "list"}).out == "TEST_TOKEN\n");
  CHECK(pined.auditEvents("secret.set").size() == 1);
  // A task runs, so a worker existed while the secret was held.
  CHECK(pined.ctl({"send", "main", "x"}).exitCode == 0);
  for (auto& entry : std::filesystem::recursive_directory_iterator(home + "/data")) {
    if (!entry.is_regular_file()) continue;
    std::ifstream f(entry.path());
    std::stringstream c;
    c << f.rdbuf();
    CHECK_MESSAGE(c.str().find(value) == std::string::npos, entry.path());
  }
  for (pid_t p : {pined.rolePid("broker"), pined.pid()}) {
    std::ifstream f("/proc/" + std::to_string(p) + "/environ");
    std::stringstream c;
    c << f.rdbuf();
    CHECK(c.str().find(value) == std::string::npos);
  }
  // Bad names are refused without echoing anything back.
  auto bad = pined.ctl({"secret", "set", "lower-case"}, "whatever-value-123\n");
  CHECK(bad.exitCode == 1);
  CHECK(bad.err.find("whatever-value-123") == std::string::npos);
  CHECK(pined.ctl({"secret", "unset", "TEST_TOKEN"}).exitCode == 0);
  CHECK(pined.ctl({"secret", "list"}).out.empty());
}

TEST_CASE("an agent with sandbox: false is refused, not run unconfined; its sandboxed twin runs") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main", "loose"});
  std::ofstream(home + "/agents/loose/agent.yaml") << "description: loose\nsandbox: false\n";
  Pined pined(home, {}, {});
  auto r = pined.ctl({"send", "loose", "hello"});
  CHECK(r.exitCode == 1);
  CHECK(r.err.find("sandbox") != std::string::npos);
  CHECK(pined.auditEvents("task.start").empty());
  CHECK(pined.ctl({"send", "main", "hello"}).exitCode == 0);
}
