#include "config/errors.h"

#include <algorithm>
#include <cctype>

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

std::size_t editDistance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

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
  std::string best;
  std::size_t bestDistance = SIZE_MAX;
  for (const auto& c : candidates) {
    if (c == word) continue;
    const std::string f = fold(c);
    // Same word in another spelling (case, snake_case) is the likeliest intent of all.
    std::size_t dist = (f == w) ? 0 : editDistance(w, f) + 1;
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

}  // namespace pine::config
