#include "schedule/describe.h"

#include <cstdio>
#include <optional>
#include <vector>

#include "schedule/cron.h"
#include "schedule/one_shot.h"

namespace pine::schedule {

namespace {

std::string every(long long n, const char* one, const char* many) {
  return n == 1 ? std::string("every ") + one : "every " + std::to_string(n) + " " + many;
}

std::string interval(int sec) {
  if (sec % 86400 == 0) return every(sec / 86400, "day", "days");
  if (sec % 3600 == 0) return every(sec / 3600, "hour", "hours");
  if (sec % 60 == 0) return every(sec / 60, "minute", "min");
  return "every " + std::to_string(sec) + " s";
}

std::string twoDigits(int v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02d", v);
  return buf;
}

// "a", "a and b", "a, b and c".
std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

// The set values in `order`, runs of three or more written as "first-last".
template <std::size_t N>
std::string values(const std::bitset<N>& bits, const std::vector<int>& order, const std::vector<std::string>& names) {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < order.size();) {
    if (!bits[static_cast<std::size_t>(order[i])]) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j + 1 < order.size() && bits[static_cast<std::size_t>(order[j + 1])]) ++j;
    auto name = [&](std::size_t k) { return names.empty() ? std::to_string(order[k]) : names[static_cast<std::size_t>(order[k])]; };
    if (j - i >= 2) {
      parts.push_back(name(i) + "-" + name(j));
    } else {
      for (std::size_t k = i; k <= j; ++k) parts.push_back(name(k));
    }
    i = j + 1;
  }
  return joined(parts);
}

std::vector<int> span(int lo, int hi) {
  std::vector<int> v;
  for (int i = lo; i <= hi; ++i) v.push_back(i);
  return v;
}

// The days ("" for every day); nullopt when too irregular to say simply.
std::optional<std::string> days(const Cron& c) {
  static const std::vector<std::string> dayNames = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const std::vector<std::string> monthNames = {"",    "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  std::string dom = c.days.count() == 31 ? "" : "on day" + std::string(c.days.count() > 1 ? "s " : " ") +
                                                    values(c.days, span(1, 31), {}) + " of the month";
  std::string dow = c.weekdays.all() ? "" : "on " + values(c.weekdays, {1, 2, 3, 4, 5, 6, 0}, dayNames);
  std::string out;
  if (!dom.empty() && !dow.empty()) {
    if (!c.domRestricted || !c.dowRestricted) return std::nullopt;  // "*/2" with "mon": both must match
    out = dom + " or " + dow;
  } else {
    out = dom.empty() ? dow : dom;
  }
  if (c.months.count() != 12) out += (out.empty() ? "" : " ") + std::string("in ") + values(c.months, span(1, 12), monthNames);
  return out;
}

// The times of day, or "" when too irregular to say simply.
std::string times(const Cron& c) {
  const std::size_t nm = c.minutes.count(), nh = c.hours.count();
  if (nh == 24) {
    if (nm == 60) return "every minute";
    if (nm == 1)
      for (int m = 0; m < 60; ++m)
        if (c.minutes[static_cast<std::size_t>(m)]) return "every hour at :" + twoDigits(m);
    for (int step = 2; step <= 30; ++step) {
      if (60 % step || nm != static_cast<std::size_t>(60 / step)) continue;
      bool regular = true;
      for (int m = 0; m < 60; ++m) regular = regular && c.minutes[static_cast<std::size_t>(m)] == (m % step == 0);
      if (regular) return "every " + std::to_string(step) + " min";
    }
    return "";
  }
  if (nm * nh > 4) return "";
  std::vector<std::string> at;
  for (int h = 0; h < 24; ++h)
    for (int m = 0; m < 60; ++m)
      if (c.hours[static_cast<std::size_t>(h)] && c.minutes[static_cast<std::size_t>(m)])
        at.push_back(twoDigits(h) + ":" + twoDigits(m));
  return "at " + joined(at);
}

std::string zoneSuffix(const std::string& tz) { return " (" + (tz.empty() ? std::string("local time") : tz) + ")"; }

}  // namespace

std::string describeSchedule(const config::Schedule& s) {
  if (s.intervalSec > 0) return interval(s.intervalSec);
  if (!s.at.empty()) {
    auto at = parseAt(s.at, nullptr);
    if (!at) return "once at " + s.at;
    std::string text = s.at.substr(0, 10) + " " + s.at.substr(11, at->local.time_since_epoch().count() % 60 ? 8 : 5);
    if (!at->offset) return "once at " + text + zoneSuffix(s.timezone);
    return "once at " + text + " " + (s.at.back() == 'Z' ? std::string("UTC") : s.at.substr(s.at.size() - 6));
  }
  auto cron = parseCron(s.cron, nullptr);
  std::string when = cron ? times(*cron) : "";
  auto onDays = cron ? days(*cron) : std::nullopt;
  if (when.empty() || !onDays) return "cron \"" + s.cron + "\"" + zoneSuffix(s.timezone);
  std::string on = *onDays;
  if (on.empty()) on = when.rfind("at ", 0) == 0 ? "every day" : "";
  std::string text = when.rfind("at ", 0) == 0 ? on + " " + when : (on.empty() ? when : when + " " + on);
  return text + zoneSuffix(s.timezone);
}

}  // namespace pine::schedule
