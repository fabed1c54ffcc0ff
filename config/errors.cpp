#include "config/errors.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

namespace pine::config {

std::string ConfigError::format() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
  out += ": ";
  if (!keyPath.empty()) out += keyPath + ": ";
  out += message;
  if (!hint.empty()) out += " (" + hint + ")";
  return out;
}

std::string formatErrors(std::vector<ConfigError> errors) {
  std::stable_sort(errors.begin(), errors.end(), [](const ConfigError& a, const ConfigError& b) {
    if (a.file != b.file) return a.file < b.file;
    if (a.line != b.line) return a.line < b.line;
    return a.column < b.column;
  });
  std::string out;
  for (const auto& e : errors) out += e.format() + "\n";
  return out;
}

void addError(std::vector<ConfigError>& errors, ConfigError e) {
  if (errors.size() < kMaxErrors) {
    errors.push_back(std::move(e));
  } else if (errors.size() == kMaxErrors) {
    errors.push_back({std::move(e.file), 0, 0, "",
                      "more than " + std::to_string(kMaxErrors) + " errors; the rest are not shown",
                      "fix these and check again"});
  }
}

namespace {

// Optimal string alignment distance, or some value above `bound` as soon as every
// alignment is past it. Three rows, not a table: it runs once per candidate.
std::size_t osaDistance(std::string_view a, std::string_view b, std::size_t bound) {
  const std::size_t n = a.size(), m = b.size();
  if ((n > m ? n - m : m - n) > bound) return bound + 1;
  std::vector<std::size_t> rows(3 * (m + 1));
  std::size_t* prev2 = rows.data();
  std::size_t* prev = prev2 + (m + 1);
  std::size_t* cur = prev + (m + 1);
  for (std::size_t j = 0; j <= m; ++j) prev[j] = j;
  std::size_t prevMin = 0;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    std::size_t rowMin = cur[0];
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      std::size_t d = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d = std::min(d, prev2[j - 2] + 1);
      cur[j] = d;
      rowMin = std::min(rowMin, d);
    }
    // Every later cell builds on this row or the one before (a transposition), plus zero or more.
    if (rowMin > bound && prevMin > bound) return bound + 1;
    prevMin = rowMin;
    std::size_t* t = prev2;
    prev2 = prev;
    prev = cur;
    cur = t;
  }
  return prev[m];
}

}  // namespace

std::size_t editDistance(std::string_view a, std::string_view b) { return osaDistance(a, b, SIZE_MAX - 1); }

namespace {

std::string fold(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.empty() || word.size() > 200) return {};
  const std::string w = fold(word);
  // No candidate further than this can be accepted below (the limit there is at most
  // this), so distances past it need not be exact.
  const std::size_t bound = std::max<std::size_t>(1, w.size() / 3);
  std::size_t cells = 0;  // an upper bound of the work below: folding only shortens
  for (const auto& c : candidates)
    if ((cells += (w.size() + 1) * (c.size() + 1)) > kMaxHintCells) return {};
  std::string best;
  std::size_t bestDistance = SIZE_MAX;
  for (const auto& c : candidates) {
    if (c == word) continue;
    const std::string f = fold(c);
    // Same word in another spelling (case, snake_case) is the likeliest intent of all.
    std::size_t dist = (f == w) ? 0 : osaDistance(w, f, bound) + 1;
    if (dist < bestDistance) {
      bestDistance = dist;
      best = c;
    }
  }
  if (best.empty()) return {};
  // Distance 0 is a spelling variant; otherwise allow about one edit per three letters.
  const std::size_t limit = std::max<std::size_t>(1, std::min(w.size(), fold(best).size()) / 3);
  if (bestDistance == 0 || bestDistance - 1 <= limit) return best;
  return {};
}

std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string n = nearest(word, candidates);
  return n.empty() ? std::string() : "did you mean '" + n + "'?";
}

std::string whatExists(std::string_view word, const std::vector<std::string>& candidates, std::string_view plural) {
  if (candidates.empty()) return "there are no " + std::string(plural);
  std::string list;
  size_t shown = 0;
  for (const auto& c : candidates) {
    if (shown == 20) break;
    list += (shown++ ? ", " : "") + c;
  }
  if (candidates.size() > shown) list += " and " + std::to_string(candidates.size() - shown) + " more";
  std::string guess = didYouMean(word, candidates);
  return (guess.empty() ? "" : guess + " ") + "the " + std::string(plural) + " are: " + list;
}

}  // namespace pine::config
