// describeSchedule: the common shapes in words, the rest quoted as written.
#include <doctest/doctest.h>

#include "schedule/describe.h"

using pine::schedule::describeSchedule;

namespace {

pine::config::Schedule cronIn(const char* expr, const char* tz = "Europe/Berlin") {
  pine::config::Schedule s;
  s.cron = expr;
  s.timezone = tz;
  return s;
}

}  // namespace

TEST_CASE("describe: intervals") {
  pine::config::Schedule s;
  s.intervalSec = 900;
  CHECK(describeSchedule(s) == "every 15 min");
  s.intervalSec = 60;
  CHECK(describeSchedule(s) == "every minute");
  s.intervalSec = 3600;
  CHECK(describeSchedule(s) == "every hour");
  s.intervalSec = 7200;
  CHECK(describeSchedule(s) == "every 2 hours");
  s.intervalSec = 5400;
  CHECK(describeSchedule(s) == "every 90 min");
  s.intervalSec = 86400;
  CHECK(describeSchedule(s) == "every day");
  s.intervalSec = 7 * 86400;
  CHECK(describeSchedule(s) == "every 7 days");
  s.intervalSec = 90;
  CHECK(describeSchedule(s) == "every 90 s");
}

TEST_CASE("describe: cron") {
  CHECK(describeSchedule(cronIn("0 7 * * *")) == "every day at 07:00 (Europe/Berlin)");
  CHECK(describeSchedule(cronIn("30 7 * * mon-fri", "")) == "on Mon-Fri at 07:30 (local time)");
  CHECK(describeSchedule(cronIn("0 9,18 * * sat,sun")) == "on Sat and Sun at 09:00 and 18:00 (Europe/Berlin)");
  CHECK(describeSchedule(cronIn("0 9 * * 1,3,5")) == "on Mon, Wed and Fri at 09:00 (Europe/Berlin)");
  CHECK(describeSchedule(cronIn("0 0 1 * *")) == "on day 1 of the month at 00:00 (Europe/Berlin)");
  CHECK(describeSchedule(cronIn("0 8 1,15 jan-mar *")) ==
        "on days 1 and 15 of the month in Jan-Mar at 08:00 (Europe/Berlin)");
  CHECK(describeSchedule(cronIn("0 8 13 * fri")) == "on day 13 of the month or on Fri at 08:00 (Europe/Berlin)");
  CHECK(describeSchedule(cronIn("*/15 * * * *", "UTC")) == "every 15 min (UTC)");
  CHECK(describeSchedule(cronIn("* * * * *", "UTC")) == "every minute (UTC)");
  CHECK(describeSchedule(cronIn("5 * * * mon-fri", "UTC")) == "every hour at :05 on Mon-Fri (UTC)");
  // Too irregular for a sentence: quoted as written.
  CHECK(describeSchedule(cronIn("*/15 8-18 * * mon-fri")) == "cron \"*/15 8-18 * * mon-fri\" (Europe/Berlin)");
  CHECK(describeSchedule(cronIn("0 0 */2 * mon")) == "cron \"0 0 */2 * mon\" (Europe/Berlin)");
}

TEST_CASE("describe: one-shots") {
  pine::config::Schedule s;
  s.at = "2026-12-24T18:00";
  s.timezone = "Europe/Berlin";
  CHECK(describeSchedule(s) == "once at 2026-12-24 18:00 (Europe/Berlin)");
  s.at = "2026-12-24T18:00:30";
  CHECK(describeSchedule(s) == "once at 2026-12-24 18:00:30 (Europe/Berlin)");
  s.timezone.clear();
  s.at = "2026-12-24T18:00Z";
  CHECK(describeSchedule(s) == "once at 2026-12-24 18:00 UTC");
  s.at = "2026-12-24T18:00-05:00";
  CHECK(describeSchedule(s) == "once at 2026-12-24 18:00 -05:00");
}
