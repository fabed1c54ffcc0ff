// When a configured schedule runs next.
#pragma once
#include <optional>
#include <string>

#include "config/model.h"

namespace pine::schedule {

// When `s` runs next, in ms since the epoch, given its last run (0: never), when pine started and now.
// - intervalSec: startedMs + interval the first time, then lastRunMs + interval. Runs missed while pine
//   was down (or the machine slept) are not made up one by one: an overdue run happens once.
// - cron: the next match after max(lastRunMs, startedMs). Runs that fell while pine was down are
//   skipped, not caught up; a run missed while pine was up (a late timer, a sleeping machine) runs once.
// - at: once; nullopt once it ran (lastRunMs at or after its instant). An `at` that passed while pine
//   was down, or before the schedule was added, runs once when pine starts.
// A time already past is returned as nowMs: the run is due now. nullopt when it never runs again
// (*error cleared), or when the schedule cannot be read (*error says why; config validates first).
std::optional<long long> nextRunMs(const config::Schedule& s, long long lastRunMs, long long startedMs,
                                   long long nowMs, std::string* error);

}  // namespace pine::schedule
