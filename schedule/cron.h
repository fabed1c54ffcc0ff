// Five-field cron: the parsed form, the parser, and the next run in a time zone.
// Depends on nothing in pine, so config/ can check `cron` at load with the same rules.
#pragma once
#include <bitset>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace pine::schedule {

struct Cron {
  std::bitset<60> minutes;  // 0-59
  std::bitset<24> hours;    // 0-23
  std::bitset<32> days;     // day of month 1-31 (bit 0 unused)
  std::bitset<13> months;   // 1-12 (bit 0 unused)
  std::bitset<7> weekdays;  // 0-6, Sunday = 0 (7 is read as 0)
  // A day field counts as restricted unless it starts with '*' (as in Vixie cron, so "*/2" is not).
  // Both restricted: a day matching either runs; otherwise a day must match both.
  bool domRestricted = false, dowRestricted = false;
};

// "*", numbers, lists (1,15), ranges (1-5), steps (*/15, 1-30/5, 10/20 = 10-max/20), names jan-dec and
// sun-sat (any case, also in ranges), 7 = Sunday. Fields are separated by blanks. On failure *error
// (when given) says which field, what is wrong and what is allowed; nullopt is returned. A day of month
// that no listed month has (31 in feb) is refused, since the schedule would never run.
std::optional<Cron> parseCron(std::string_view expr, std::string* error);

// Whether the local calendar day (year, month 1-12, day 1-31, weekday 0-6) is a day the cron runs on.
bool cronRunsOnDay(const Cron& cron, unsigned month, unsigned day, unsigned weekday);

// The first run strictly after `after` in zone `tz` ("" = the machine's zone, from /etc/localtime;
// UTC when that cannot be read). Classic cron semantics: when both day fields are restricted, either
// matches. DST: a local time skipped by a spring-forward runs once, at the first instant after the gap;
// a local time that occurs twice (fall-back) runs once, at its first occurrence. nullopt with *error
// set for an unknown zone; nullopt with an empty error when nothing matches within ten years.
std::optional<std::chrono::sys_seconds> nextCronRun(const Cron& cron, const std::string& tz,
                                                    std::chrono::sys_seconds after, std::string* error);

}  // namespace pine::schedule
