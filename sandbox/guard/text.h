// The small string tests the guard's files share (one definition, so that the
// files can also be compiled as one unit).
#pragma once
#include <cctype>
#include <string>
#include <string_view>

namespace pine::guard {

inline bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
inline bool endsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Shell pattern match (*, ?, [...], backslash) in O(pattern x text): the
// classic single-backtrack algorithm, so that no pattern can take exponential time.
inline bool shellPatternMatch(std::string_view pat, std::string_view text) {
  // One pattern element at p: its length, and whether it matches c.
  auto element = [&](size_t p, char c, size_t& len) {
    char pc = pat[p];
    if (pc == '?') {
      len = 1;
      return true;
    }
    if (pc == '\\' && p + 1 < pat.size()) {
      len = 2;
      return pat[p + 1] == c;
    }
    if (pc == '[') {
      size_t k = p + 1;
      bool negate = k < pat.size() && (pat[k] == '!' || pat[k] == '^');
      if (negate) ++k;
      bool matched = false;
      bool first = true;
      while (k < pat.size() && (pat[k] != ']' || first)) {
        first = false;
        if (k + 2 < pat.size() && pat[k + 1] == '-' && pat[k + 2] != ']') {
          if (c >= pat[k] && c <= pat[k + 2]) matched = true;
          k += 3;
        } else {
          if (pat[k] == c) matched = true;
          ++k;
        }
      }
      if (k >= pat.size()) {  // no closing ']': a literal '['
        len = 1;
        return c == '[';
      }
      len = k + 1 - p;
      return matched != negate;
    }
    len = 1;
    return pc == c;
  };
  size_t p = 0, t = 0, starP = std::string_view::npos, starT = 0;
  while (t < text.size()) {
    size_t len = 0;
    if (p < pat.size() && pat[p] == '*') {
      starP = ++p;
      starT = t;
    } else if (p < pat.size() && element(p, text[t], len)) {
      p += len;
      ++t;
    } else if (starP != std::string_view::npos) {
      p = starP;
      t = ++starT;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

}  // namespace pine::guard
