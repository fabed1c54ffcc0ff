// Time zone names, checked against the tz database the scheduler uses (the system's
// /usr/share/zoneinfo through Howard Hinnant's date library). No other pine dependency.
#pragma once
#include <string>

namespace pine::schedule {

// Empty when `name` is a zone pine can schedule in ("Europe/Berlin", "UTC"), else what is wrong and,
// for a near miss in letter case, the right spelling.
std::string zoneProblem(const std::string& name);

}  // namespace pine::schedule
