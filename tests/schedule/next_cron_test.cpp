// nextCronRun: tables in UTC, then Europe/Berlin and America/New_York across both DST changes
// of 2026, short months, Feb 29 and the day-of-month OR day-of-week rule.
#include <doctest/doctest.h>
#include <unistd.h>

#include <climits>
#include <string>

#include "schedule/cron.h"
#include "helpers.h"

using namespace pine::schedule;
using pine::schedule::test::utc;

namespace {

// The run after `after` (UTC text), as UTC text; "never" when none, "error: ..." on an error.
std::string next(const char* expr, const char* tz, const char* after) {
  std::string error;
  auto c = parseCron(expr, &error);
  if (!c) return "parse: " + error;
  auto t = nextCronRun(*c, tz, utc(after), &error);
  return t ? utc(*t) : error.empty() ? "never" : "error: " + error;
}

// Each run after the previous one: what a scheduler sees when it records every run.
std::string runs(const char* expr, const char* tz, const char* after, int n) {
  std::string out, prev = after;
  for (int i = 0; i < n; ++i) {
    prev = next(expr, tz, prev.c_str());
    out += (i ? " | " : "") + prev;
  }
  return out;
}

}  // namespace

TEST_CASE("next run in UTC: the first match strictly after") {
  struct Row {
    const char *expr, *after, *expected;
  };
  // 2026-01-01 is a Thursday.
  const Row rows[] = {
      {"0 7 * * *", "2026-01-01 06:59", "2026-01-01 07:00"},
      {"0 7 * * *", "2026-01-01 07:00", "2026-01-02 07:00"},  // strictly after
      {"0 7 * * *", "2026-01-01 07:00:01", "2026-01-02 07:00"},
      {"* * * * *", "2026-01-01 07:00", "2026-01-01 07:01"},
      {"*/15 * * * *", "2026-01-01 00:07", "2026-01-01 00:15"},
      {"*/15 * * * *", "2026-01-01 23:50", "2026-01-02 00:00"},
      {"5 */6 * * *", "2026-01-01 06:05", "2026-01-01 12:05"},
      {"0 0 1 1 *", "2026-01-01 00:00", "2027-01-01 00:00"},
      {"59 23 31 12 *", "2026-06-01 00:00", "2026-12-31 23:59"},
      {"0 7 * * mon-fri", "2026-01-02 07:00", "2026-01-05 07:00"},  // Friday -> Monday
      {"30 8 * * 7", "2026-01-01 00:00", "2026-01-04 08:30"},       // 7 is Sunday
      {"30 8 * * sun", "2026-01-04 08:30", "2026-01-11 08:30"},
      {"0 9 1 jan,jul *", "2026-01-01 09:00", "2026-07-01 09:00"},
      {"0 12 * dec *", "2026-01-01 00:00", "2026-12-01 12:00"},
      {"15 10 1-7 * *", "2026-01-07 10:15", "2026-02-01 10:15"},
  };
  for (const Row& r : rows) {
    INFO(r.expr, " after ", r.after);
    CHECK(next(r.expr, "UTC", r.after) == r.expected);
    CHECK(next(r.expr, "Etc/UTC", r.after) == r.expected);
  }
}

TEST_CASE("day of month 31 skips the months without one") {
  CHECK(runs("0 0 31 * *", "UTC", "2026-01-01 00:00", 6) ==
        "2026-01-31 00:00 | 2026-03-31 00:00 | 2026-05-31 00:00 | 2026-07-31 00:00 | 2026-08-31 00:00 | "
        "2026-10-31 00:00");
  CHECK(runs("0 0 30 * *", "UTC", "2026-01-30 00:00", 2) == "2026-03-30 00:00 | 2026-04-30 00:00");
}

TEST_CASE("Feb 29 runs in leap years only, even eight years apart") {
  CHECK(runs("0 0 29 2 *", "UTC", "2026-01-01 00:00", 3) == "2028-02-29 00:00 | 2032-02-29 00:00 | 2036-02-29 00:00");
  CHECK(next("0 0 29 feb *", "UTC", "2096-03-01 00:00") == "2104-02-29 00:00");  // 2100 is no leap year
  CHECK(next("0 0 28 2 *", "UTC", "2027-02-28 00:00") == "2028-02-28 00:00");
}

TEST_CASE("both day fields restricted: a day matching either runs (classic cron)") {
  // The 13th OR any Friday. 2026-01-02 and 2026-01-09 are Fridays, the 13th a Tuesday.
  CHECK(runs("0 0 13 * fri", "UTC", "2026-01-01 00:00", 4) ==
        "2026-01-02 00:00 | 2026-01-09 00:00 | 2026-01-13 00:00 | 2026-01-16 00:00");
  // Day 1 OR Monday.
  CHECK(runs("0 8 1 * mon", "UTC", "2026-01-27 00:00", 3) == "2026-02-01 08:00 | 2026-02-02 08:00 | 2026-02-09 08:00");
  // One day field '*' (or '*/n'): both must match. Odd days that are Mondays: Jan 5 and 19.
  CHECK(runs("0 0 */2 * mon", "UTC", "2026-01-01 00:00", 2) == "2026-01-05 00:00 | 2026-01-19 00:00");
  // Only the day of week restricted: that alone.
  CHECK(runs("0 0 * * mon", "UTC", "2026-01-01 00:00", 2) == "2026-01-05 00:00 | 2026-01-12 00:00");
  // Only the day of month restricted: that alone.
  CHECK(runs("0 0 13 * *", "UTC", "2026-01-01 00:00", 2) == "2026-01-13 00:00 | 2026-02-13 00:00");
}

TEST_CASE("cronRunsOnDay applies the month and the day rule") {
  auto c = parseCron("0 0 13 jan fri", nullptr);
  REQUIRE(c);
  CHECK(cronRunsOnDay(*c, 1, 13, 2));
  CHECK(cronRunsOnDay(*c, 1, 2, 5));
  CHECK_FALSE(cronRunsOnDay(*c, 1, 3, 6));
  CHECK_FALSE(cronRunsOnDay(*c, 2, 13, 5));  // wrong month
  CHECK_FALSE(cronRunsOnDay(*c, 13, 13, 5));
}

TEST_CASE("Europe/Berlin, spring forward 2026-03-29 02:00 CET -> 03:00 CEST") {
  // 02:30 does not exist that day: it runs once, at 03:00 CEST (01:00 UTC), then 02:30 CEST on.
  CHECK(runs("30 2 * * *", "Europe/Berlin", "2026-03-28 00:00", 3) ==
        "2026-03-28 01:30 | 2026-03-29 01:00 | 2026-03-30 00:30");
  // A 03:00 job and the skipped 02:xx collapse onto the same instant: one run.
  CHECK(runs("*/30 * * * *", "Europe/Berlin", "2026-03-29 00:00", 4) ==
        "2026-03-29 00:30 | 2026-03-29 01:00 | 2026-03-29 01:30 | 2026-03-29 02:00");
  // An ordinary time keeps its local hour across the change.
  CHECK(runs("0 7 * * *", "Europe/Berlin", "2026-03-28 00:00", 2) == "2026-03-28 06:00 | 2026-03-29 05:00");
}

TEST_CASE("Europe/Berlin, fall back 2026-10-25 03:00 CEST -> 02:00 CET") {
  // 02:30 happens twice: it runs once, at the first (CEST, 00:30 UTC).
  CHECK(runs("30 2 * * *", "Europe/Berlin", "2026-10-24 00:00", 3) ==
        "2026-10-24 00:30 | 2026-10-25 00:30 | 2026-10-26 01:30");
  // The repeated hour is not run again: after 02:30 CEST comes 03:00 CET.
  CHECK(runs("*/30 * * * *", "Europe/Berlin", "2026-10-24 23:45", 4) ==
        "2026-10-25 00:00 | 2026-10-25 00:30 | 2026-10-25 02:00 | 2026-10-25 02:30");
  CHECK(runs("0 7 * * *", "Europe/Berlin", "2026-10-24 00:00", 2) == "2026-10-24 05:00 | 2026-10-25 06:00");
}

TEST_CASE("America/New_York, spring forward 2026-03-08 02:00 EST -> 03:00 EDT") {
  CHECK(runs("30 2 * * *", "America/New_York", "2026-03-07 00:00", 3) ==
        "2026-03-07 07:30 | 2026-03-08 07:00 | 2026-03-09 06:30");
  CHECK(runs("0 9 * * *", "America/New_York", "2026-03-07 00:00", 2) == "2026-03-07 14:00 | 2026-03-08 13:00");
}

TEST_CASE("America/New_York, fall back 2026-11-01 02:00 EDT -> 01:00 EST") {
  // 01:30 happens twice: once, at 01:30 EDT (05:30 UTC); the next day 01:30 EST (06:30 UTC).
  CHECK(runs("30 1 * * *", "America/New_York", "2026-10-31 00:00", 3) ==
        "2026-10-31 05:30 | 2026-11-01 05:30 | 2026-11-02 06:30");
  CHECK(runs("0 9 * * *", "America/New_York", "2026-10-31 00:00", 2) == "2026-10-31 13:00 | 2026-11-01 14:00");
}

TEST_CASE("zones: unknown names are errors naming the zone; \"\" is the machine's zone") {
  CHECK(next("0 7 * * *", "Mars/Olympus", "2026-01-01 00:00") == "error: unknown time zone 'Mars/Olympus'");
  CHECK(next("0 7 * * *", "europe/berlin", "2026-01-01 00:00") ==
        "error: unknown time zone 'europe/berlin' (did you mean 'Europe/Berlin'?)");
  CHECK(next("0 7 * * *", "zone.tab", "2026-01-01 00:00").rfind("error: unknown time zone", 0) == 0);
  CHECK(next("0 7 * * *", "../../etc/passwd", "2026-01-01 00:00").rfind("error: unknown time zone", 0) == 0);

  // The machine's zone is what /etc/localtime names (UTC when it names none).
  std::string machine = "UTC";
  char link[PATH_MAX] = {};
  if (readlink("/etc/localtime", link, sizeof link - 1) > 0) {
    std::string l = link;
    auto at = l.find("zoneinfo/");
    if (at != std::string::npos) machine = l.substr(at + 9);
  }
  INFO("machine zone: ", machine);
  CHECK(next("0 7 * * *", "", "2026-01-01 00:00") == next("0 7 * * *", machine.c_str(), "2026-01-01 00:00"));
  CHECK(next("0 7 * * *", "", "2026-07-01 00:00") == next("0 7 * * *", machine.c_str(), "2026-07-01 00:00"));
}

TEST_CASE("a cron that matches nothing returns nullopt with no error") {
  Cron none;  // no bits: cannot come from parseCron, which refuses such days
  std::string error = "stale";
  CHECK_FALSE(nextCronRun(none, "UTC", utc("2026-01-01 00:00"), &error));
  CHECK(error.empty());
}
