// pine-launch as pined uses it. No process pined starts holds a secret its job
// does not name: the memory of the launcher (the monitor), the pid namespace's
// init and the program of a running task, and of the broker's three, is scanned
// for a value that is in .env; pined itself, which holds it, is the scanner's
// control. And a failure inside the launcher reaches pined and the audit log.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

bool memoryHolds(pid_t pid, const std::string& needle, size_t& scanned) {
  return countInMemory(pid, {needle}, &scanned)[0] > 0;
}

std::string comm(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace

TEST_CASE("the monitor, init and program of a task and of the broker hold no secret from .env") {
  LINUX_BACKEND_ONLY();
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"slow"});
  // Built at run time, so that the test binary's own image does not hold it as a literal.
  std::string secret = "pine-mem-" + std::to_string(getpid()) + "-Qz7wK2vR9xLm4";
  writeText(home + "/.env", "SCAN_ME=" + secret + "\n");
  chmod((home + "/.env").c_str(), 0600);
  Pined pined(home, {"--worker-program", testBinDir() + "/fixtures/test-worker"}, {});
  REQUIRE(pined.ctl({"send", "--no-wait", "slow", "stay a while"}).exitCode == 0);
  pid_t worker = 0;
  REQUIRE(waitUntil([&] { return (worker = pined.rolePid("worker")) > 0; }, 5s));
  std::vector<pid_t> init, program;
  REQUIRE(waitUntil([&] { return (init = childrenOf(worker)).size() == 1; }, 5s));
  REQUIRE(waitUntil([&] { return (program = childrenOf(init[0])).size() == 1; }, 5s));
  REQUIRE(waitUntil([&] { return comm(program[0]) == "test-worker"; }, 5s));
  pid_t broker = pined.rolePid("broker");
  REQUIRE(broker > 0);
  std::vector<pid_t> brokerInit = childrenOf(broker);
  REQUIRE(brokerInit.size() == 1);
  std::vector<pid_t> brokerProgram = childrenOf(brokerInit[0]);
  REQUIRE(brokerProgram.size() == 1);

  // The control: pined holds the secret, and the scanner finds it there.
  size_t scanned = 0;
  CHECK(memoryHolds(pined.pid(), secret, scanned));
  CHECK(scanned > 0);

  for (auto [who, process] : std::vector<std::pair<std::string, pid_t>>{{"task's launcher (monitor)", worker},
                                                                    {"task's init", init[0]},
                                                                    {"task's program", program[0]},
                                                                    {"broker's launcher (monitor)", broker},
                                                                    {"broker's init", brokerInit[0]},
                                                                    {"broker", brokerProgram[0]}}) {
    const std::string what = who;  // CAPTURE cannot take a structured binding (clang 14)
    const pid_t pid = process;
    CAPTURE(what);
    CAPTURE(comm(pid));
    size_t bytes = 0;
    CHECK_FALSE(memoryHolds(pid, secret, bytes));
    CHECK(bytes > 0);
  }
  // The launcher is a program of its own, not a copy of pined.
  CHECK(comm(worker) == "pine-launch");
  CHECK(comm(broker) == "pine-launch");
}

TEST_CASE("a worker pine-launch cannot start is refused, and the audit log says at which step") {
  LINUX_BACKEND_ONLY();
  TempDir dir;
  std::string home = dir.path() + "/home", bin = dir.path() + "/bin";
  REQUIRE(mkdir(bin.c_str(), 0755) == 0);
  // Executable, so pined accepts it at start; its interpreter does not exist, so its execve fails
  // inside the sandbox, in pine-launch's worker, after every other step worked.
  writeText(bin + "/broken-worker", "#!/nonexistent/interpreter\n");
  REQUIRE(chmod((bin + "/broken-worker").c_str(), 0755) == 0);
  Pined pined(home, {"--worker-program", bin + "/broken-worker"});
  auto r = pined.ctl({"send", "main", "hello"});
  CHECK(r.exitCode == 1);
  CHECK_MESSAGE(contains(r.err, "in its sandbox: execve: No such file or directory"), r.err);
  auto refused = pined.auditJson("sandbox.refused");
  REQUIRE(refused.size() == 1);
  CHECK(refused[0].value("agent", "") == "main");
  CHECK(contains(refused[0].value("reason", ""), "in its sandbox: execve: No such file or directory"));
  CHECK(pined.auditJson("task.start").empty());
  CHECK(pined.rolePid("worker") == 0);
}
