// nextCronRun: walk local calendar days in the schedule's zone and turn the first matching
// wall-clock time into an instant (tz_db.h says how gaps and repeated hours resolve).
#include "schedule/cron.h"
#include "schedule/tz_db.h"

namespace pine::schedule {

std::optional<std::chrono::sys_seconds> nextCronRun(const Cron& cron, const std::string& tz,
                                                    std::chrono::sys_seconds after, std::string* error) {
  using namespace std::chrono;
  const date::time_zone* zone = detail::findZone(tz, error);
  if (!zone) return std::nullopt;
  if (error) error->clear();
  // Wall-clock times map to instants in order (a gap collapses onto its end, a repeated hour keeps
  // its first pass), so the first candidate in local order that lies after `after` is the answer.
  // Start a day early: around a transition the local date of `after` can be ahead of a candidate's.
  date::local_days day = date::floor<date::days>(zone->to_local(after)) - date::days{1};
  constexpr int kSearchDays = 366 * 10 + 2;  // Feb 29 can be eight years away (2096 -> 2104)
  for (int i = 0; i < kSearchDays; ++i, day += date::days{1}) {
    const date::year_month_day ymd{day};
    const date::weekday wd{day};
    if (!cronRunsOnDay(cron, static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), wd.c_encoding()))
      continue;
    for (int h = 0; h < 24; ++h) {
      if (!cron.hours[static_cast<std::size_t>(h)]) continue;
      for (int m = 0; m < 60; ++m) {
        if (!cron.minutes[static_cast<std::size_t>(m)]) continue;
        const date::local_seconds local = day + hours{h} + minutes{m};
        const sys_seconds t = detail::resolveLocal(*zone, local);
        if (t > after) return t;
      }
    }
  }
  return std::nullopt;
}

}  // namespace pine::schedule
