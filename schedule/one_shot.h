// The one-shot form of a schedule, `at: "2026-12-24T18:00"`: its text and the instant it means.
// Depends on nothing in pine, so config/ checks `at` at load with the same rules.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace pine::schedule {

struct OneShot {
  std::chrono::local_seconds local;          // the wall-clock time written
  std::optional<std::chrono::minutes> offset;  // set when written with "Z" or "+hh:mm" / "-hh:mm"
};

// "YYYY-MM-DDTHH:MM", optionally ":SS", optionally "Z" or an offset "+hh:mm" / "-hh:mm" (up to 14:00).
// nullopt with *error (when given) saying what is wrong and showing the form.
std::optional<OneShot> parseAt(std::string_view text, std::string* error);

// The instant: with an offset, the local time minus it; without, the local time in zone `tz`
// ("" = the machine's), a time in a spring-forward gap meaning the first instant after it and a
// repeated time its first occurrence. nullopt with *error set for an unknown zone.
std::optional<std::chrono::sys_seconds> oneShotInstant(const OneShot& at, const std::string& tz, std::string* error);

}  // namespace pine::schedule
