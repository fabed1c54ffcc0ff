#include "broker/sources/ftp_listing.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>

#include "common/outside_text.h"

namespace pine::sources {
namespace {

std::string ftpLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (char)std::tolower((unsigned char)c);
  return out;
}

// A decimal size, or -1 when it is not one (or does not fit).
std::int64_t decimalSize(std::string_view s) {
  if (s.empty() || s.size() > 18) return -1;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

// MLSD's modify fact, YYYYMMDDHHMMSS[.sss] in UTC, as ISO 8601; "" when it is not one.
std::string mlsdTime(std::string_view v) {
  if (v.size() < 14) return "";
  for (std::size_t i = 0; i < 14; ++i)
    if (v[i] < '0' || v[i] > '9') return "";
  std::string d(v.substr(0, 14));
  return d.substr(0, 4) + "-" + d.substr(4, 2) + "-" + d.substr(6, 2) + "T" + d.substr(8, 2) + ":" + d.substr(10, 2) +
         ":" + d.substr(12, 2) + "Z";
}

// Splits `text` into lines (LF or CRLF) and hands each to `line`; false once the listing is refused.
bool eachListingLine(std::string_view text, FtpListing& out, const std::function<void(std::string_view)>& line) {
  if (text.size() > kMaxFtpListingBytes) {
    out.error = "the listing is over " + std::to_string(kMaxFtpListingBytes >> 20) + " MiB";
    return false;
  }
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view l = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty()) continue;
    line(l);
    if (out.files.size() + out.refused > kMaxFtpEntries) {
      out.files.clear();
      out.error = "the folder holds more than " + std::to_string(kMaxFtpEntries) + " entries";
      return false;
    }
  }
  return true;
}

void keepEntry(FtpListing& out, FtpEntry e) {
  if (!ftpNameProblem(e.name).empty()) {
    ++out.refused;
    return;
  }
  if (e.modified.size() > 64 || stripTerminalControls(e.modified) != e.modified) e.modified.clear();
  out.files.push_back(std::move(e));
}

}  // namespace

std::string ftpNameProblem(std::string_view name) {
  if (name.empty() || name.size() > 255) return "empty or over 255 bytes";
  if (name == "." || name == "..") return "'.' or '..'";
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') return "a '/', '\\' or control character";
  // Bytes that are not UTF-8 and C1 controls: what stripping would change is not a plain name.
  if (stripTerminalControls(name) != name) return "not plain UTF-8 text";
  return "";
}

FtpListing parseMlsd(std::string_view text) {
  FtpListing out;
  eachListingLine(text, out, [&](std::string_view l) {
    // "facts; name": facts hold no ';' in their values, so the first "; " ends them. A line
    // without facts starts with the space.
    std::size_t cut = l.front() == ' ' ? 0 : l.find("; ");
    if (cut == std::string_view::npos) return;  // not an MLSD line: ignored
    std::string_view facts = l.substr(0, cut == 0 ? 0 : cut + 1);
    FtpEntry e;
    e.name = std::string(l.substr(cut == 0 ? 1 : cut + 2));
    std::string type;
    while (!facts.empty()) {
      std::size_t semi = facts.find(';');
      std::string_view fact = facts.substr(0, semi);
      facts = semi == std::string_view::npos ? std::string_view() : facts.substr(semi + 1);
      std::size_t eq = fact.find('=');
      if (eq == std::string_view::npos) continue;
      std::string key = ftpLower(fact.substr(0, eq));
      std::string_view value = fact.substr(eq + 1);
      if (key == "type") type = ftpLower(value);
      else if (key == "size") e.size = decimalSize(value);
      else if (key == "modify") e.modified = mlsdTime(value);
    }
    if (type == "file") keepEntry(out, std::move(e));
  });
  return out;
}

FtpListing parseUnixList(std::string_view text) {
  static const std::array<const char*, 12> months = {"jan", "feb", "mar", "apr", "may", "jun",
                                                     "jul", "aug", "sep", "oct", "nov", "dec"};
  FtpListing out;
  eachListingLine(text, out, [&](std::string_view l) {
    if (l.size() < 10 || l[0] != '-') return;  // plain files only: not folders, links, "total N"
    // The fields up to the name, split on runs of spaces: mode, links, owner, [group,] size,
    // month, day, time or year. The month (after the size) is the anchor.
    struct Field {
      std::size_t at, len;
    };
    std::vector<Field> f;
    std::size_t i = 0;
    while (i < l.size() && f.size() < 9) {
      while (i < l.size() && l[i] == ' ') ++i;
      std::size_t start = i;
      while (i < l.size() && l[i] != ' ') ++i;
      if (i > start) f.push_back({start, i - start});
    }
    for (std::size_t m = 3; m + 2 < f.size() && m <= 5; ++m) {
      std::string mon = ftpLower(l.substr(f[m].at, f[m].len));
      if (std::find(months.begin(), months.end(), mon) == months.end()) continue;
      std::int64_t size = decimalSize(l.substr(f[m - 1].at, f[m - 1].len));
      if (size < 0) continue;
      std::size_t nameAt = f[m + 2].at + f[m + 2].len + 1;  // one space after the time or year
      if (nameAt >= l.size()) return;
      FtpEntry e;
      e.size = size;
      e.modified = std::string(l.substr(f[m].at, nameAt - 1 - f[m].at));
      e.name = std::string(l.substr(nameAt));
      keepEntry(out, std::move(e));
      return;
    }
  });
  return out;
}

}  // namespace pine::sources
