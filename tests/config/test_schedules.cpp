// Schedules at load: `cron`, `at` and `timezone` are checked with the scheduler's own rules
// (schedule/), each refusal at its file:line:column, each beside a twin that loads.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include "helpers.h"

using namespace pine::config;
using pine::config::test::dump;
using pine::config::test::findError;
using pine::config::test::TempHome;

namespace {

// The example home with `item` (block YAML, "key: value" lines) as the first schedule. Returns
// the line the item starts on.
int withSchedule(const TempHome& h, const std::string& item) {
  std::string text = "  - name: extra\n";
  std::size_t start = 0;
  while (start < item.size()) {
    auto end = item.find('\n', start);
    if (end == std::string::npos) end = item.size();
    text += "    " + item.substr(start, end - start) + "\n";
    start = end + 1;
  }
  h.replace("pine.yaml", "schedules:\n", "schedules:\n" + text);
  std::ifstream in(h.path("pine.yaml"));
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return static_cast<int>(std::count(all.begin(), all.begin() + static_cast<long>(all.find("schedules:\n")), '\n')) + 2;
}

struct Refused {
  const char* item;
  const char* keyPath;
  int lineInItem;  // 0: the "- name" line, 1: the next, ...
  const char* message;
};

}  // namespace

TEST_CASE("schedules: bad cron, at and timezone are refused at file:line with what is allowed") {
  const Refused rows[] = {
      {"agent: main\ncron: \"0 7 * * 8\"\ntask: t", "schedules[0].cron", 2,
       "'8' is outside 0-7 in the day of week field"},
      {"agent: main\ncron: \"0 7 * *\"\ntask: t", "schedules[0].cron", 2, "expected five fields"},
      {"agent: main\ncron: \"*/0 * * * *\"\ntask: t", "schedules[0].cron", 2, "bad step '*/0' in the minute field"},
      {"agent: main\ncron: \"0 7 * foo *\"\ntask: t", "schedules[0].cron", 2,
       "cannot read 'foo' in the month field: use 1-12 or jan-dec"},
      {"agent: main\ncron: \"0 0 31 feb *\"\ntask: t", "schedules[0].cron", 2, "would never run"},
      {"agent: main\ncron: \"0 7 * * *\"\ntimezone: Mars/Olympus\ntask: t", "schedules[0].timezone", 3,
       "unknown time zone 'Mars/Olympus'"},
      {"agent: main\ncron: \"0 7 * * *\"\ntimezone: europe/berlin\ntask: t", "schedules[0].timezone", 3,
       "unknown time zone 'europe/berlin' (did you mean 'Europe/Berlin'?)"},
      {"agent: main\ncron: \"0 7 * * *\"\ntimezone: ../../../etc/passwd\ntask: t", "schedules[0].timezone", 3,
       "unknown time zone"},
      {"agent: main\nat: \"2026-02-30T10:00\"\ntask: t", "schedules[0].at", 2,
       "cannot read '2026-02-30T10:00' as a time: there is no such day"},
      {"agent: main\nat: \"2026-12-24 18:00\"\ntask: t", "schedules[0].at", 2, "expected 'T' between the date and the time"},
      {"agent: main\nat: tomorrow\ntask: t", "schedules[0].at", 2, "expected a date YYYY-MM-DD"},
      {"agent: main\nat: \"2026-12-24T18:00Z\"\ntimezone: Europe/Berlin\ntask: t", "schedules[0].timezone", 3,
       "'at' already says its offset, so 'timezone' would be ignored"},
      {"agent: main\nat: \"2026-12-24T18:00\"\ncron: \"0 7 * * *\"\ntask: t", "schedules[0]", 0,
       "a schedule needs exactly one of 'cron', 'intervalSec' and 'at'"},
      {"agent: main\nat: \"2026-12-24T18:00\"\nintervalSec: 3600\ntask: t", "schedules[0]", 0, "exactly one of"},
      {"agent: main\ntask: t", "schedules[0]", 0, "exactly one of"},
  };
  for (const Refused& row : rows) {
    INFO(row.item);
    TempHome h;
    const int first = withSchedule(h, row.item);
    auto r = h.load();
    REQUIRE_FALSE(r.ok());
    auto* e = findError(r.errors, row.keyPath, row.message);
    REQUIRE_MESSAGE(e, dump(r.errors));
    CHECK(e->file == h.path("pine.yaml"));
    CHECK(e->line == first + row.lineInItem);
    CHECK(e->column > 0);
    CHECK(e->format().rfind(h.path("pine.yaml") + ":" + std::to_string(e->line) + ":", 0) == 0);
    CHECK(r.errors.size() == 1);
  }
}

TEST_CASE("schedules: good cron, at and timezone load, with their values") {
  const char* good[] = {
      "agent: main\ncron: \"30 2 * * *\"\ntimezone: America/New_York\ntask: t",
      "agent: main\ncron: \"*/15 8-18 1,15 jan-dec 0\"\ntask: t",
      "agent: main\ncron: \"0 0 29 feb *\"\ntimezone: UTC\ntask: t",
      "agent: main\ncron: \"0 0 31 feb mon\"\ntask: t",  // either day field: Mondays in February
      "agent: main\nat: \"2026-12-24T18:00\"\ntimezone: Europe/Berlin\ntask: t",
      "agent: main\nat: \"2026-12-24T18:00:30\"\ntask: t",
      "agent: main\nat: \"2026-12-24T18:00+01:00\"\ntask: t",
      "agent: main\nat: \"2026-12-24T18:00Z\"\ntask: t",
      "agent: \"*\"\nintervalSec: 3600\ntask: t",
  };
  for (const char* item : good) {
    INFO(item);
    TempHome h;
    withSchedule(h, item);
    auto r = h.load();
    REQUIRE_MESSAGE(r.ok(), dump(r.errors));
    REQUIRE(r.home->pine.schedules.size() == 2);
    const Schedule& s = r.home->pine.schedules[0];
    CHECK(s.name == "extra");
    CHECK(int(!s.cron.empty()) + int(s.intervalSec > 0) + int(!s.at.empty()) == 1);
  }
  TempHome h;
  withSchedule(h, "agent: main\nat: \"2026-12-24T18:00\"\ntimezone: Europe/Berlin\ntask: t");
  auto r = h.load();
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  CHECK(r.home->pine.schedules[0].at == "2026-12-24T18:00");
  CHECK(r.home->pine.schedules[0].timezone == "Europe/Berlin");
  CHECK(r.home->pine.schedules[0].cron.empty());
}
