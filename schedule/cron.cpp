#include "schedule/cron.h"

#include <array>
#include <cctype>
#include <vector>

namespace pine::schedule {

namespace {

struct Field {
  const char* name;
  int lo, hi;
  const char* names[12];  // index i is the value lo + i
  const char* allowed;    // said in errors
};

const std::array<Field, 5> kFields = {{
    {"minute", 0, 59, {}, "0-59"},
    {"hour", 0, 23, {}, "0-23"},
    {"day of month", 1, 31, {}, "1-31"},
    {"month", 1, 12, {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"},
     "1-12 or jan-dec"},
    {"day of week", 0, 7, {"sun", "mon", "tue", "wed", "thu", "fri", "sat"}, "0-7 (0 and 7 are Sunday) or sun-sat"},
}};

const char* kForms = "'*', a number, a list (1,15), a range (1-5) or a step (*/15, 1-30/5)";

bool fail(std::string* error, std::string msg) {
  if (error) *error = std::move(msg);
  return false;
}

// A number or, where the field has them, a name. Values are checked against the range by the caller.
bool readValue(const Field& f, std::string_view s, int& out) {
  if (s.empty()) return false;
  if (std::isdigit(static_cast<unsigned char>(s[0]))) {
    if (s.size() > 3) return false;
    int v = 0;
    for (char c : s) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
      v = v * 10 + (c - '0');
    }
    out = v;
    return true;
  }
  if (s.size() != 3) return false;
  std::string low;
  for (char c : s) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (int i = 0; i < 12 && f.names[i]; ++i)
    if (low == f.names[i]) {
      out = f.lo + i;
      return true;
    }
  return false;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// One comma-separated item into bits (indexed by value; the day of week's 7 is folded by the caller).
bool readItem(const Field& f, std::string_view item, std::vector<bool>& bits, std::string* error) {
  const std::string where = std::string(" in the ") + f.name + " field";
  if (item.empty()) return fail(error, "empty list item" + where + "; use " + kForms);
  std::string_view range = item;
  int step = 1;
  bool stepped = false;
  if (auto slash = item.find('/'); slash != std::string_view::npos) {
    std::string_view s = item.substr(slash + 1);
    int v = 0;
    bool digits = !s.empty() && s.size() <= 3;
    for (char c : s) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    if (digits) v = std::stoi(std::string(s));
    if (!digits || v < 1 || v > f.hi)
      return fail(error, "bad step " + quoted(item) + where + ": a step is a whole number from 1 to " +
                             std::to_string(f.hi));
    step = v;
    stepped = true;
    range = item.substr(0, slash);
  }
  int a = f.lo, b = f.hi;
  if (range != "*") {
    auto dash = range.find('-');
    bool ok = dash == std::string_view::npos
                  ? readValue(f, range, a)
                  : readValue(f, range.substr(0, dash), a) && readValue(f, range.substr(dash + 1), b);
    if (!ok) return fail(error, "cannot read " + quoted(item) + where + ": use " + f.allowed + ", or " + kForms);
    if (dash == std::string_view::npos) b = stepped ? f.hi : a;  // "10/20": from 10 to the end, every 20
    if (a < f.lo || a > f.hi || b < f.lo || b > f.hi)
      return fail(error, quoted(item) + " is outside " + std::to_string(f.lo) + "-" + std::to_string(f.hi) + where);
    if (b < a)
      return fail(error, quoted(item) + " runs backwards" + where + "; write it as two ranges (e.g. 22-23,0-2)");
  }
  for (int v = a; v <= b; v += step) bits[static_cast<std::size_t>(v)] = true;
  return true;
}

template <std::size_t N>
void copyBits(const std::vector<bool>& from, std::bitset<N>& to) {
  for (std::size_t i = 0; i < N && i < from.size(); ++i) to[i] = from[i];
}

constexpr std::array<unsigned, 13> kMaxDays = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

}  // namespace

std::optional<Cron> parseCron(std::string_view expr, std::string* error) {
  std::vector<std::string_view> fields;
  for (std::size_t i = 0; i < expr.size();) {
    if (std::isspace(static_cast<unsigned char>(expr[i]))) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < expr.size() && !std::isspace(static_cast<unsigned char>(expr[j]))) ++j;
    fields.push_back(expr.substr(i, j - i));
    i = j;
  }
  auto refuse = [error](std::string msg) {
    fail(error, std::move(msg));
    return std::nullopt;
  };
  const std::string five = "five fields (minute hour day-of-month month day-of-week), e.g. \"0 7 * * mon-fri\"";
  if (fields.empty()) return refuse("the cron expression is empty; expected " + five);
  if (fields.size() != 5) return refuse("expected " + five + ", got " + std::to_string(fields.size()));

  Cron c;
  for (std::size_t i = 0; i < 5; ++i) {
    const Field& f = kFields[i];
    std::vector<bool> bits(static_cast<std::size_t>(f.hi) + 1, false);
    std::string_view text = fields[i];
    for (std::size_t start = 0;;) {
      auto comma = text.find(',', start);
      std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (!readItem(f, item, bits, error)) return std::nullopt;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    switch (i) {
      case 0: copyBits(bits, c.minutes); break;
      case 1: copyBits(bits, c.hours); break;
      case 2: copyBits(bits, c.days); c.domRestricted = text[0] != '*'; break;
      case 3: copyBits(bits, c.months); break;
      case 4:
        if (bits[7]) bits[0] = true;
        copyBits(bits, c.weekdays);
        c.dowRestricted = text[0] != '*';
        break;
    }
  }
  // When the day of month must match (alone, or because the day of week is '*'), some listed month must
  // have such a day; otherwise "0 0 31 feb *" would be accepted and never run.
  if (!c.dowRestricted || !c.domRestricted) {
    bool possible = false;
    for (unsigned m = 1; m <= 12 && !possible; ++m)
      for (unsigned d = 1; d <= kMaxDays[m] && !possible; ++d) possible = c.months[m] && c.days[d];
    if (!possible)
      return refuse("day of month " + quoted(fields[2]) + " never falls in month " + quoted(fields[3]) +
                    ", so the schedule would never run");
  }
  return c;
}

bool cronRunsOnDay(const Cron& c, unsigned month, unsigned day, unsigned weekday) {
  if (month > 12 || day > 31 || weekday > 6 || !c.months[month]) return false;
  const bool dom = c.days[day], dow = c.weekdays[weekday];
  if (c.domRestricted && c.dowRestricted) return dom || dow;
  return dom && dow;
}

}  // namespace pine::schedule
