#include "broker/usage.h"

#include <time.h>

#include <algorithm>
#include <regex>

namespace pine {

store::Usage priceUsage(const model::Usage& turn, const config::Model* model) {
  store::Usage u;
  u.tokensIn = turn.input;
  u.tokensOut = turn.output;
  u.cacheRead = turn.cacheRead;
  u.cacheWrite = turn.cacheWrite;
  if (model && model->pricing) {
    const auto& p = *model->pricing;
    // Counts are at most 2^53 each (providers/types.h) and prices at most 1e5: no overflow.
    u.cost = ((double)turn.input * p.input + (double)turn.output * p.output + (double)turn.cacheRead * p.cacheRead +
              (double)turn.cacheWrite * p.cacheWrite) /
             1e6;
  } else {
    u.unpricedTokens = u.tokens();
  }
  return u;
}

nlohmann::json usageJson(const store::Usage& u) {
  nlohmann::json j = {{"input", u.tokensIn},
                      {"output", u.tokensOut},
                      {"cacheRead", u.cacheRead},
                      {"cacheWrite", u.cacheWrite},
                      {"cost", u.costKnown() ? nlohmann::json(u.cost) : nlohmann::json(nullptr)}};
  if (!u.costKnown()) {
    j["unpricedTokens"] = u.unpricedTokens;
    if (u.cost > 0) j["pricedCost"] = u.cost;
  }
  return j;
}

long long startOfTodayMs() {
  time_t now = time(nullptr);
  struct tm tm;
  localtime_r(&now, &tm);
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  tm.tm_isdst = -1;  // midnight may fall in another DST period than now
  return (long long)mktime(&tm) * 1000;
}

namespace {

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int daysIn(int y, int m) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : days[m - 1];
}

}  // namespace

std::optional<long long> parseSince(const std::string& since, std::string& why) {
  static const std::regex form(
      R"(^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$)");
  std::smatch m;
  why = "since '" + since.substr(0, 64) +
        "' is not a date or time: write YYYY-MM-DD (from local midnight) or an ISO time such as "
        "2026-12-03T14:30, 2026-12-03T14:30:00Z or 2026-12-03T14:30+01:00";
  if (!std::regex_match(since, m, form)) return std::nullopt;
  auto num = [&](int i) { return m[i].matched ? std::stoi(m[i].str()) : 0; };
  int y = num(1), mo = num(2), d = num(3), h = num(4), mi = num(5), s = num(6);
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59) {
    why = "since '" + since + "' names no such day or time (month 01-12, day of that month, 00:00-23:59:59)";
    return std::nullopt;
  }
  struct tm tm {};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  long long ms = 0;
  if (m[7].matched) {
    std::string frac = m[7].str();
    frac.resize(3, '0');
    ms = std::stoi(frac);
  }
  if (!m[8].matched) {
    tm.tm_isdst = -1;
    return (long long)mktime(&tm) * 1000 + ms;
  }
  long long offsetSec = 0;
  std::string zone = m[8].str();
  if (zone != "Z") {
    std::string digits = zone.substr(1);
    digits.erase(std::remove(digits.begin(), digits.end(), ':'), digits.end());
    int oh = std::stoi(digits.substr(0, 2)), om = std::stoi(digits.substr(2, 2));
    if (oh > 23 || om > 59) {
      why = "since '" + since + "': the offset " + zone + " is not a time zone's";
      return std::nullopt;
    }
    offsetSec = (oh * 3600LL + om * 60LL) * (zone[0] == '-' ? -1 : 1);
  }
  return ((long long)timegm(&tm) - offsetSec) * 1000 + ms;
}

}  // namespace pine
