// Internal to schedule/: the date library's zones, and how a local time becomes an
// instant. Only this library's sources include it (they are built with USE_OS_TZDB=1, which
// changes date's types, so the public headers stay free of date).
#pragma once
#include <date/tz.h>

#include <chrono>
#include <string>

namespace pine::schedule::detail {

// The zone called `tz`, or the machine's for "" (UTC when /etc/localtime cannot be read); nullptr
// with *error set when there is no such zone or its data cannot be read.
const date::time_zone* findZone(const std::string& tz, std::string* error);

// The instant a local wall-clock time means in `zone`: a time skipped by a spring-forward gap is the
// first instant after the gap; a time that occurs twice is its first occurrence.
std::chrono::sys_seconds resolveLocal(const date::time_zone& zone, date::local_seconds local);

}  // namespace pine::schedule::detail
