// A worker is assumed hostile: whatever it sends, the broker neither crashes nor stalls.
#include <doctest/doctest.h>
#include <signal.h>

#include <future>

#include <nlohmann/json.hpp>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

// Runs one task in the given hostile mode; returns the task as the broker recorded it.
nlohmann::json runHostile(Pined& pined, const std::string& mode) {
  auto r = pined.ctl({"send", "--json", mode, "attack"});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), mode << ": " << r.out << r.err);
  return j;
}

}  // namespace

TEST_CASE("hostile workers cannot crash or stall the broker") {
  TempDir dir;
  Pined pined(dir.path() + "/home", {"--worker-program", testBinDir() + "/fixtures/test-worker"},
              {"garbage-first", "garbage", "huge", "badutf8", "bigmsg", "flood", "exit", "good"});
  pid_t broker = pined.rolePid("broker");
  REQUIRE(broker > 0);

  struct Case {
    std::string mode, state, errorHas;
  };
  std::vector<Case> cases = {
      {"garbage-first", "failed", ""},        // bytes that are no Cap'n Proto at all, before any call
      {"garbage", "failed", ""},              // a valid call, then garbage on the same stream
      {"huge", "failed", "1 MiB"},            // an answer over the size limit
      {"badutf8", "failed", "UTF-8"},         // an answer that is not text
      {"bigmsg", "failed", ""},               // a 48 MiB message: over the link's limit
      {"flood", "failed", "flooded on purpose"},  // 22,000 calls in flight, then two answers
      {"exit", "failed", "exited with 3"},    // dies before saying anything
  };
  for (auto& c : cases) {
    CAPTURE(c.mode);
    // Not stalled: while the hostile task runs, the broker answers someone else. (No time
    // limit on the task itself: under the sanitizer the flood alone takes seconds.)
    auto task = std::async(std::launch::async, [&] { return runHostile(pined, c.mode); });
    waitUntil([&] { return pined.rolePid("worker") != 0 || task.wait_for(0s) == std::future_status::ready; },
              20s);
    CHECK(pined.ctl({"status"}).exitCode == 0);
    REQUIRE_MESSAGE(task.wait_for(120s) == std::future_status::ready, c.mode << " never ended");
    auto j = task.get();
    CHECK(j["state"] == c.state);
    if (!c.errorHas.empty()) CHECK(j.value("error", "").find(c.errorHas) != std::string::npos);
    // Still the same broker.
    CHECK(pined.rolePid("broker") == broker);
  }
  // And the legitimate use still works after all of that.
  auto ok = runHostile(pined, "good");
  CHECK(ok["state"] == "done");
  CHECK(ok["answer"] == "ok from test worker: attack");
  CHECK(pined.rolePid("broker") == broker);
  CHECK(pined.auditEvents("process.restart").empty());
  // Nothing left running from all those tasks.
  CHECK(waitUntil([&] { return pined.rolePid("worker") == 0; }, 3s));
}
