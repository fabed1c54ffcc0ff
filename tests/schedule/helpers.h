// Times written as text in UTC ("2026-03-29 01:00"), so that tables read like a calendar and a
// failing CHECK prints both sides.
#pragma once
#include <date/date.h>

#include <chrono>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace pine::schedule::test {

inline std::chrono::sys_seconds utc(const std::string& text) {
  std::istringstream in(text);
  std::chrono::sys_seconds t;
  in >> date::parse(text.size() > 16 ? "%F %T" : "%F %R", t);
  if (in.fail()) throw std::invalid_argument("test time '" + text + "' is not YYYY-MM-DD HH:MM[:SS]");
  return t;
}

inline std::string utc(std::chrono::sys_seconds t) {
  return date::format(t.time_since_epoch().count() % 60 ? "%F %T" : "%F %R", t);
}
inline std::string utc(const std::optional<std::chrono::sys_seconds>& t) { return t ? utc(*t) : "never"; }

inline long long ms(const std::string& text) { return utc(text).time_since_epoch().count() * 1000; }
inline std::string utcMs(const std::optional<long long>& v) {
  if (!v) return "never";
  auto t = std::chrono::sys_seconds{std::chrono::seconds{*v / 1000}};
  return *v % 1000 ? utc(t) + "+" + std::to_string(*v % 1000) + "ms" : utc(t);
}

}  // namespace pine::schedule::test
