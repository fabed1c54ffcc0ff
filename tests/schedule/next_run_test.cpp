// nextRunMs: intervals, cron and one-shots against last run, start and now; what happens to runs
// missed while pine was down; and the errors a schedule that skipped validation gets.
#include <doctest/doctest.h>

#include <string>

#include "schedule/next_run.h"
#include "schedule/one_shot.h"
#include "helpers.h"

using namespace pine::schedule;
using pine::schedule::test::ms;
using pine::schedule::test::utc;
using pine::schedule::test::utcMs;

namespace {

pine::config::Schedule every(int sec) {
  pine::config::Schedule s;
  s.name = "tick";
  s.intervalSec = sec;
  return s;
}

pine::config::Schedule cron(const char* expr, const char* tz = "UTC") {
  pine::config::Schedule s;
  s.name = "brief";
  s.cron = expr;
  s.timezone = tz;
  return s;
}

pine::config::Schedule once(const char* at, const char* tz = "") {
  pine::config::Schedule s;
  s.name = "xmas";
  s.at = at;
  s.timezone = tz;
  return s;
}

std::string next(const pine::config::Schedule& s, long long last, long long started, long long now) {
  std::string error;
  auto v = nextRunMs(s, last, started, now, &error);
  return error.empty() ? utcMs(v) : "error: " + error;
}

}  // namespace

TEST_CASE("interval: start + interval first, then last run + interval") {
  auto s = every(3600);
  CHECK(next(s, 0, ms("2026-01-05 10:00"), ms("2026-01-05 10:00")) == "2026-01-05 11:00");
  CHECK(next(s, 0, ms("2026-01-05 10:00"), ms("2026-01-05 10:30")) == "2026-01-05 11:00");
  CHECK(next(s, ms("2026-01-05 11:00"), ms("2026-01-05 10:00"), ms("2026-01-05 11:00")) == "2026-01-05 12:00");
  // A run that took a while or started late counts from when it ran.
  CHECK(next(s, ms("2026-01-05 11:00") + 2500, ms("2026-01-05 10:00"), ms("2026-01-05 11:01")) ==
        "2026-01-05 12:00:02+500ms");
  CHECK(next(every(900), ms("2026-01-05 11:00"), ms("2026-01-05 10:00"), ms("2026-01-05 11:00")) ==
        "2026-01-05 11:15");
}

TEST_CASE("interval: runs missed while pine was down happen once, not once per period") {
  auto s = every(3600);
  // Last run 11:00, pine down from 11:30 to 15:20: four periods missed, one run, now.
  const long long last = ms("2026-01-05 11:00"), started = ms("2026-01-05 15:20");
  CHECK(next(s, last, started, started) == "2026-01-05 15:20");
  // That run recorded, the next is an hour later, not at 16:00 or 12:00.
  CHECK(next(s, started, started, started + 1000) == "2026-01-05 16:20");
  // Due exactly now: now.
  CHECK(next(s, last, ms("2026-01-05 10:00"), ms("2026-01-05 12:00")) == "2026-01-05 12:00");
}

TEST_CASE("cron: the next match after the last run or the start, whichever is later") {
  auto s = cron("0 7 * * *");
  // Never run: the first 07:00 after pine started.
  CHECK(next(s, 0, ms("2026-01-05 06:00"), ms("2026-01-05 06:00")) == "2026-01-05 07:00");
  CHECK(next(s, 0, ms("2026-01-05 08:00"), ms("2026-01-05 08:00")) == "2026-01-06 07:00");
  // Ran at 07:00 (a little after, in fact): the next day.
  CHECK(next(s, ms("2026-01-05 07:00") + 250, ms("2026-01-01 00:00"), ms("2026-01-05 07:00") + 300) ==
        "2026-01-06 07:00");
  CHECK(next(cron("30 2 * * *", "Europe/Berlin"), ms("2026-03-28 01:30"), ms("2026-03-01 00:00"),
             ms("2026-03-28 01:30")) == "2026-03-29 01:00");
}

TEST_CASE("cron: runs that fell while pine was down are skipped, not caught up") {
  auto s = cron("0 7 * * *");
  // Last ran Monday 07:00; pine down until Thursday 09:00: Tue, Wed, Thu are not made up.
  CHECK(next(s, ms("2026-01-05 07:00"), ms("2026-01-08 09:00"), ms("2026-01-08 09:00")) == "2026-01-09 07:00");
  // Down until Thursday 06:00: Thursday's run is still ahead and happens.
  CHECK(next(s, ms("2026-01-05 07:00"), ms("2026-01-08 06:00"), ms("2026-01-08 06:00")) == "2026-01-08 07:00");
  // Pine up but the run missed (a machine asleep since Monday): one run now, then the usual time.
  CHECK(next(s, ms("2026-01-05 07:00"), ms("2026-01-01 00:00"), ms("2026-01-07 09:00")) == "2026-01-07 09:00");
  CHECK(next(s, ms("2026-01-07 09:00"), ms("2026-01-01 00:00"), ms("2026-01-07 09:00")) == "2026-01-08 07:00");
}

TEST_CASE("at: once, in its zone or at its offset; nothing after it ran") {
  const long long before = ms("2026-12-01 00:00");
  CHECK(next(once("2026-12-24T18:00", "Europe/Berlin"), 0, before, before) == "2026-12-24 17:00");
  CHECK(next(once("2026-12-24T18:00", "America/New_York"), 0, before, before) == "2026-12-24 23:00");
  CHECK(next(once("2026-12-24T18:00", "UTC"), 0, before, before) == "2026-12-24 18:00");
  CHECK(next(once("2026-12-24T18:00:30", "UTC"), 0, before, before) == "2026-12-24 18:00:30");
  CHECK(next(once("2026-12-24T18:00Z"), 0, before, before) == "2026-12-24 18:00");
  CHECK(next(once("2026-12-24T18:00+05:30"), 0, before, before) == "2026-12-24 12:30");
  CHECK(next(once("2026-12-24T18:00-05:00"), 0, before, before) == "2026-12-24 23:00");
  // Ran: never again, and no error.
  const long long ran = ms("2026-12-24 17:00") + 40;
  CHECK(next(once("2026-12-24T18:00", "Europe/Berlin"), ran, before, ran + 1) == "never");
  // A last run from before this time (the schedule was moved later) does not count.
  CHECK(next(once("2026-12-24T18:00", "Europe/Berlin"), ms("2026-06-01 00:00"), before, before) ==
        "2026-12-24 17:00");
  // Passed while pine was down and never ran: once, now.
  CHECK(next(once("2026-12-24T18:00", "Europe/Berlin"), 0, ms("2026-12-25 08:00"), ms("2026-12-25 08:00")) ==
        "2026-12-25 08:00");
}

TEST_CASE("at: local times in a DST gap or a repeated hour resolve like cron") {
  const long long before = ms("2026-01-01 00:00");
  CHECK(next(once("2026-03-29T02:30", "Europe/Berlin"), 0, before, before) == "2026-03-29 01:00");
  CHECK(next(once("2026-10-25T02:30", "Europe/Berlin"), 0, before, before) == "2026-10-25 00:30");
  CHECK(next(once("2026-11-01T01:30", "America/New_York"), 0, before, before) == "2026-11-01 05:30");
}

TEST_CASE("parseAt: the accepted forms and the refusals") {
  std::string error;
  auto a = parseAt("2028-02-29T23:59:59", &error);
  REQUIRE_MESSAGE(a, error);
  CHECK_FALSE(a->offset);
  auto z = parseAt("2026-12-24T18:00Z", &error);
  REQUIRE(z);
  CHECK(z->offset == std::chrono::minutes{0});
  auto plus = parseAt("2026-12-24T18:00+14:00", &error);
  REQUIRE(plus);
  CHECK(plus->offset == std::chrono::minutes{14 * 60});

  const char* bad[] = {"",
                       "2026-12-24",
                       "2026-12-24 18:00",
                       "2026-12-24T18",
                       "2026-12-24T18:00:",
                       "2026-12-24T24:00",
                       "2026-12-24T18:60",
                       "2026-12-24T18:00:60",
                       "2026-13-01T00:00",
                       "2026-02-29T00:00",
                       "2026-04-31T00:00",
                       "26-12-24T18:00",
                       "2026-12-24T18:00+1",
                       "2026-12-24T18:00+15:00",
                       "2026-12-24T18:00+01:60",
                       "2026-12-24T18:00Zulu",
                       "2026-12-24T18:00 ",
                       "tomorrow"};
  for (const char* b : bad) {
    INFO(b);
    error.clear();
    CHECK_FALSE(parseAt(b, &error));
    CHECK(error.rfind(std::string("cannot read '") + b + "' as a time: ", 0) == 0);
    CHECK(error.find("write \"2026-12-24T18:00\"") != std::string::npos);
  }
  CHECK_FALSE(parseAt("2026-02-29T00:00", &error));
  CHECK(error.find("there is no such day") != std::string::npos);
}

TEST_CASE("errors: a schedule that did not pass validation says what and where") {
  const long long t = ms("2026-01-01 00:00");
  CHECK(next(cron("61 * * * *"), 0, t, t) == "error: schedule 'brief': '61' is outside 0-59 in the minute field");
  CHECK(next(cron("0 7 * * *", "Nowhere/City"), 0, t, t) ==
        "error: schedule 'brief': unknown time zone 'Nowhere/City'");
  CHECK(next(once("2026-12-24T18:00", "Nowhere/City"), 0, t, t) ==
        "error: schedule 'xmas': unknown time zone 'Nowhere/City'");
  CHECK(next(once("soon"), 0, t, t).rfind("error: schedule 'xmas': cannot read 'soon' as a time", 0) == 0);
  auto two = cron("0 7 * * *");
  two.intervalSec = 60;
  CHECK(next(two, 0, t, t) == "error: schedule 'brief': needs exactly one of 'cron', 'intervalSec' and 'at'");
  pine::config::Schedule none;
  none.name = "empty";
  CHECK(next(none, 0, t, t) == "error: schedule 'empty': needs exactly one of 'cron', 'intervalSec' and 'at'");
}
