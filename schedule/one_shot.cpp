#include "schedule/one_shot.h"

#include <cctype>

#include "schedule/tz_db.h"

namespace pine::schedule {

namespace {

// Exactly n digits at text[pos], as a number; -1 otherwise.
int digits(std::string_view text, std::size_t pos, std::size_t n) {
  if (pos + n > text.size()) return -1;
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return -1;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

bool has(std::string_view text, std::size_t pos, char c) { return pos < text.size() && text[pos] == c; }

}  // namespace

std::optional<OneShot> parseAt(std::string_view text, std::string* error) {
  auto refuse = [&](const std::string& why) {
    if (error)
      *error = "cannot read '" + std::string(text) + "' as a time: " + why +
               "; write \"2026-12-24T18:00\" (in 'timezone'), or add \"Z\" or an offset like \"+01:00\"";
    return std::nullopt;
  };
  const int y = digits(text, 0, 4), mo = digits(text, 5, 2), d = digits(text, 8, 2);
  if (y < 0 || mo < 0 || d < 0 || !has(text, 4, '-') || !has(text, 7, '-')) return refuse("expected a date YYYY-MM-DD");
  if (!has(text, 10, 'T')) return refuse("expected 'T' between the date and the time");
  const int h = digits(text, 11, 2), mi = digits(text, 14, 2);
  if (h < 0 || mi < 0 || !has(text, 13, ':')) return refuse("expected a time HH:MM");
  std::size_t pos = 16;
  int s = 0;
  if (has(text, pos, ':')) {
    s = digits(text, pos + 1, 2);
    if (s < 0) return refuse("expected seconds after the second ':'");
    pos += 3;
  }
  const date::year_month_day ymd{date::year{y}, date::month{static_cast<unsigned>(mo)},
                                 date::day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return refuse("there is no such day");
  if (h > 23 || mi > 59 || s > 59) return refuse("the time must be 00:00 to 23:59:59");

  OneShot out;
  const date::local_seconds local = date::local_days{ymd} + std::chrono::hours{h} + std::chrono::minutes{mi} +
                                    std::chrono::seconds{s};
  out.local = std::chrono::local_seconds{local.time_since_epoch()};
  if (pos == text.size()) return out;
  if (text[pos] == 'Z' && pos + 1 == text.size()) {
    out.offset = std::chrono::minutes{0};
    return out;
  }
  if ((text[pos] == '+' || text[pos] == '-') && pos + 6 == text.size()) {
    const int oh = digits(text, pos + 1, 2), om = digits(text, pos + 4, 2);
    if (oh >= 0 && om >= 0 && has(text, pos + 3, ':') && om < 60 && oh * 60 + om <= 14 * 60) {
      const std::chrono::minutes off{oh * 60 + om};
      out.offset = text[pos] == '-' ? -off : off;
      return out;
    }
  }
  return refuse("after the time only \"Z\" or an offset \"+hh:mm\" / \"-hh:mm\" (at most 14:00) may follow");
}

std::optional<std::chrono::sys_seconds> oneShotInstant(const OneShot& at, const std::string& tz, std::string* error) {
  const std::chrono::sys_seconds wall{at.local.time_since_epoch()};
  if (at.offset) return wall - *at.offset;
  const date::time_zone* zone = detail::findZone(tz, error);
  if (!zone) return std::nullopt;
  return detail::resolveLocal(*zone, date::local_seconds{at.local.time_since_epoch()});
}

}  // namespace pine::schedule
