// Usage and cost (schema v10): the step from v9 keeps every task, cache tokens are added as they
// come, unpriced usage stays unknown, and the sums by agent, by local day and by task.
#include <stdlib.h>
#include <time.h>

#include <cmath>

#include "broker/store/migrations.h"
#include "tests/store/helpers.h"

using namespace pine::store;
using namespace storetest;

namespace {

TaskRow task(const std::string& id, const std::string& agent, long long createdMs) {
  return sampleTask(id, agent, "done", createdMs);
}

Usage use(long long in, long long out, long long cacheRead, long long cacheWrite, double cost, long long unpriced = 0) {
  return Usage{in, out, cacheRead, cacheWrite, cost, unpriced};
}

// The process's local time zone for one test: SQLite's 'localtime' and mktime read it.
struct LocalZone {
  std::string old;
  bool had = false;
  explicit LocalZone(const char* tz) {
    if (const char* o = getenv("TZ")) had = true, old = o;
    setenv("TZ", tz, 1);
    tzset();
  }
  ~LocalZone() {
    if (had) setenv("TZ", old.c_str(), 1);
    else unsetenv("TZ");
    tzset();
  }
};

// 2026-12-02T20:00:00Z and friends, in unix ms.
constexpr long long kDec2At20Z = 1796241600000LL;
constexpr long long kHour = 3600 * 1000LL;

}  // namespace

TEST_CASE("usage: the step from v9 keeps every task; tokens stored without a cost become unpriced") {
  TempDir dir;
  {
    // A database as pine 9 left it: the released steps up to 9, run as they were.
    Raw raw(dir.db());
    for (const auto& m : pine::store::detail::migrations())
      if (m.version <= 9) raw.exec(m.sql);
    raw.exec("PRAGMA user_version = 9");
    raw.exec("INSERT INTO tasks (id, agent, session, text, trust, state, created_ms, tokens_in, tokens_out, cost) "
             "VALUES ('priced', 'main', 'main', 'a', 'owner', 'done', 10, 1000, 100, 0.0042)");
    raw.exec("INSERT INTO tasks (id, agent, session, text, trust, state, created_ms, tokens_in, tokens_out, cost) "
             "VALUES ('unpriced', 'main', 'main', 'b', 'owner', 'done', 20, 300, 30, 0)");
    raw.exec("INSERT INTO tasks (id, agent, session, text, trust, state, created_ms) "
             "VALUES ('refused', 'other', 'main', 'c', 'untrusted', 'refused', 30)");
  }
  auto s = Store::open(dir.db());
  CHECK(s->schemaVersion() == 11);
  CHECK(s->tasks(10).size() == 3);
  auto priced = s->task("priced");
  REQUIRE(priced);
  CHECK(priced->usage.tokensIn == 1000);
  CHECK(priced->usage.tokensOut == 100);
  CHECK(priced->usage.cacheRead == 0);
  CHECK(priced->usage.cacheWrite == 0);
  CHECK(priced->usage.cost == doctest::Approx(0.0042));
  CHECK(priced->usage.costKnown());
  auto unpriced = s->task("unpriced");
  REQUIRE(unpriced);
  CHECK(unpriced->usage.unpricedTokens == 330);
  CHECK_FALSE(unpriced->usage.costKnown());
  auto refused = s->task("refused");
  REQUIRE(refused);
  CHECK(refused->usage.costKnown());
  CHECK(refused->text == "c");
  CHECK_FALSE(s->usageSince("main", 0).costKnown());
  CHECK(s->usageSince("other", 0).costKnown());
}

TEST_CASE("usage: cache reads and writes are added as model calls come, and are tokens of the day") {
  TempDir dir;
  auto s = Store::open(dir.db());
  s->putTask(task("t1", "main", 1000));
  s->addTaskUsage("t1", use(100, 20, 5000, 0, 0.01));
  s->addTaskUsage("t1", use(50, 10, 5100, 700, 0.02));
  auto t = s->task("t1");
  REQUIRE(t);
  CHECK(t->usage.tokensIn == 150);
  CHECK(t->usage.tokensOut == 30);
  CHECK(t->usage.cacheRead == 10100);
  CHECK(t->usage.cacheWrite == 700);
  CHECK(t->usage.cost == doctest::Approx(0.03));
  CHECK(t->usage.tokens() == 150 + 30 + 10100 + 700);
  CHECK(s->usageSince("main", 0).tokens() == 10980);
  // putTask (the task queue's whole row) keeps what it is given, cache columns included.
  TaskRow again = *t;
  again.state = "done";
  s->putTask(again);
  CHECK(s->task("t1")->usage.cacheRead == 10100);
  // Negative counts and costs that are not numbers are refused, and change nothing.
  CHECK(errorOf([&] { s->addTaskUsage("t1", use(-1, 0, 0, 0, 0)); }).find("negative") != std::string::npos);
  CHECK(errorOf([&] { s->addTaskUsage("t1", use(0, 0, 0, 0, std::nan(""))); }).find("cost") != std::string::npos);
  TaskRow bad = again;
  bad.usage.cacheWrite = -5;
  CHECK(errorOf([&] { s->putTask(bad); }).find("negative") != std::string::npos);
  CHECK(s->task("t1")->usage.tokensIn == 150);
}

TEST_CASE("usage: sums by agent, by the machine's local day and by task, filtered by agent and since") {
  LocalZone zone("XYZ-05:30");  // UTC+05:30: 20:00Z is 01:30 the next local day
  TempDir dir;
  auto s = Store::open(dir.db());
  s->putTask(task("a1", "alpha", kDec2At20Z - 2 * kHour));  // 2026-12-02 23:30 local
  s->addTaskUsage("a1", use(100, 10, 1000, 0, 0.5));
  s->putTask(task("a2", "alpha", kDec2At20Z));  // 2026-12-03 01:30 local
  s->addTaskUsage("a2", use(200, 20, 0, 300, 0.25));
  s->putTask(task("a3", "alpha", kDec2At20Z + kHour));  // no model call (refused before one)
  s->putTask(task("b1", "beta", kDec2At20Z + 2 * kHour));
  s->addTaskUsage("b1", use(7, 3, 0, 0, 0, 10));  // a model without pricing

  auto agents = s->usageByAgent("", 0);
  REQUIRE(agents.size() == 2);
  CHECK(agents[0].agent == "alpha");
  CHECK(agents[0].tasks == 3);
  CHECK(agents[0].usage.tokensIn == 300);
  CHECK(agents[0].usage.cacheRead == 1000);
  CHECK(agents[0].usage.cacheWrite == 300);
  CHECK(agents[0].usage.cost == doctest::Approx(0.75));
  CHECK(agents[0].usage.costKnown());
  CHECK(agents[1].agent == "beta");
  CHECK_FALSE(agents[1].usage.costKnown());
  CHECK(agents[1].usage.unpricedTokens == 10);

  auto days = s->usageByDay("", 0);
  REQUIRE(days.size() == 3);
  CHECK(days[0].day == "2026-12-03");
  CHECK(days[0].agent == "alpha");
  CHECK(days[0].tasks == 2);
  CHECK(days[0].usage.tokensIn == 200);
  CHECK(days[1].day == "2026-12-03");
  CHECK(days[1].agent == "beta");
  CHECK(days[2].day == "2026-12-02");
  CHECK(days[2].agent == "alpha");
  CHECK(days[2].usage.cacheRead == 1000);

  auto alphaDays = s->usageByDay("alpha", kDec2At20Z);
  REQUIRE(alphaDays.size() == 1);
  CHECK(alphaDays[0].usage.cost == doctest::Approx(0.25));

  auto tasks = s->usageByTask("", 0, 10);
  REQUIRE(tasks.size() == 3);  // a3 used no model
  CHECK(tasks[0].id == "b1");
  CHECK(tasks[1].id == "a2");
  CHECK(tasks[1].usage.cacheWrite == 300);
  CHECK(tasks[2].id == "a1");
  CHECK(s->usageByTask("", 0, 1).size() == 1);
  CHECK(s->tasksWithUsage("", 0) == 3);
  CHECK(s->tasksWithUsage("alpha", kDec2At20Z) == 1);
  CHECK(s->costliestTask("alpha", 0) == doctest::Approx(0.5));
  CHECK(s->usageByAgent("nobody", 0).empty());

  auto total = s->usageSince("", 0);
  CHECK(total.tokens() == 300 + 30 + 1000 + 300 + 10);
  CHECK_FALSE(total.costKnown());
}
