#include "schedule/zone.h"

#include <cctype>
#include <exception>

#include "schedule/tz_db.h"

namespace pine::schedule {

namespace detail {

namespace {

const date::time_zone* machineZone() {
  try {
    return date::current_zone();
  } catch (const std::exception&) {
    return nullptr;  // no /etc/localtime (containers): UTC, like the C library
  }
}

bool sameIgnoringCase(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

const date::time_zone* findZone(const std::string& tz, std::string* error) {
  try {
    const date::time_zone* z = nullptr;
    if (tz.empty()) {
      z = machineZone();
      if (!z) z = date::locate_zone("UTC");
    } else {
      z = date::locate_zone(tz);
    }
    // Zones are read lazily: read this one now, so that a file in zoneinfo that is no zone
    // (a table, a leap-second list) is reported here rather than when the schedule fires.
    (void)z->get_info(date::sys_seconds{});
    return z;
  } catch (const std::exception&) {
    std::string msg = "unknown time zone '" + tz + "'";
    try {
      for (const date::time_zone& z : date::get_tzdb().zones)
        if (sameIgnoringCase(std::string(z.name()), tz)) {
          msg += " (did you mean '" + std::string(z.name()) + "'?)";
          break;
        }
    } catch (const std::exception&) {
      msg += " (the tz database in /usr/share/zoneinfo cannot be read)";
    }
    if (error) *error = msg;
    return nullptr;
  }
}

std::chrono::sys_seconds resolveLocal(const date::time_zone& zone, date::local_seconds local) {
  const date::local_info info = zone.get_info(local);
  const std::chrono::sys_seconds wall{local.time_since_epoch()};
  switch (info.result) {
    case date::local_info::nonexistent: return info.second.begin;        // first instant after the gap
    case date::local_info::ambiguous: return wall - info.first.offset;   // first occurrence
    default: return wall - info.first.offset;
  }
}

}  // namespace detail

std::string zoneProblem(const std::string& name) {
  std::string error;
  if (name.empty()) return "an empty time zone; leave 'timezone' out for the machine's zone, or use a name like Europe/Berlin";
  return detail::findZone(name, &error) ? std::string() : error;
}

}  // namespace pine::schedule
