#include "schedule/next_run.h"

#include <algorithm>

#include "schedule/cron.h"
#include "schedule/one_shot.h"

namespace pine::schedule {

namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::sys_seconds;

long long toMs(sys_seconds t) { return duration_cast<milliseconds>(t.time_since_epoch()).count(); }

// The whole second holding ms: a run at 07:00:00.300 was the 07:00 run, so the next starts after it.
sys_seconds fromMsFloor(long long ms) {
  return sys_seconds{duration_cast<seconds>(milliseconds{ms - (((ms % 1000) + 1000) % 1000)})};
}

}  // namespace

std::optional<long long> nextRunMs(const config::Schedule& s, long long lastRunMs, long long startedMs,
                                   long long nowMs, std::string* error) {
  if (error) error->clear();
  auto refuse = [&](const std::string& why) -> std::optional<long long> {
    if (error) *error = "schedule '" + s.name + "': " + why;
    return std::nullopt;
  };
  const int kinds = (s.cron.empty() ? 0 : 1) + (s.intervalSec > 0 ? 1 : 0) + (s.at.empty() ? 0 : 1);
  if (kinds != 1) return refuse("needs exactly one of 'cron', 'intervalSec' and 'at'");

  std::optional<long long> next;
  if (s.intervalSec > 0) {
    const long long period = static_cast<long long>(s.intervalSec) * 1000;
    next = (lastRunMs > 0 ? lastRunMs : startedMs) + period;
  } else if (!s.cron.empty()) {
    std::string why;
    auto cron = parseCron(s.cron, &why);
    if (!cron) return refuse(why);
    auto t = nextCronRun(*cron, s.timezone, fromMsFloor(std::max(lastRunMs, startedMs)), &why);
    if (!t) return why.empty() ? std::nullopt : refuse(why);  // empty: no match in ten years
    next = toMs(*t);
  } else {
    std::string why;
    auto at = parseAt(s.at, &why);
    if (!at) return refuse(why);
    auto t = oneShotInstant(*at, s.timezone, &why);
    if (!t) return refuse(why);
    if (lastRunMs >= toMs(*t)) return std::nullopt;  // it ran
    next = toMs(*t);
  }
  return std::max(*next, nowMs);
}

}  // namespace pine::schedule
