#include "common/glob.h"

namespace pine {

bool globMatch(std::string_view pat, std::string_view s) {
  size_t p = 0, i = 0, starP = std::string_view::npos, starI = 0;
  while (i < s.size()) {
    if (p < pat.size() && pat[p] == '*') {
      starP = p++;
      starI = i;
    } else if (p < pat.size() && pat[p] == s[i]) {
      ++p;
      ++i;
    } else if (starP != std::string_view::npos) {
      p = starP + 1;
      i = ++starI;
    } else {
      return false;
    }
  }
  while (p < pat.size() && pat[p] == '*') ++p;
  return p == pat.size();
}

}  // namespace pine
