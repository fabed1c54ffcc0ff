#include "sandbox/jail/name_rules.h"

#include <utf8proc.h>

#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "common/glob.h"
#include "common/path_parts.h"

namespace pine::sandbox {
namespace {

// Does the pattern match path parts starting at some start in [0, path.size())?
// `subtree` lets a match end before the path does. Dynamic programming over
// (pattern part, path part), one row per pattern part from the last: row[si] says
// whether pattern parts [pi..] match path parts [si..]. A "**" row is
// row[si] = next[si] || row[si + 1] (it takes no part, or one more), so each cell
// is computed once: O(parts * path parts) glob calls, however many "**" there are
// (trying every split of every "**" in turn was exponential in their number).
bool matchesBelow(const std::vector<std::string>& pat, const std::vector<std::string>& path, bool subtree) {
  const size_t n = path.size();
  std::vector<char> next(n + 1), row(n + 1);
  for (size_t si = 0; si <= n; ++si) next[si] = subtree || si == n;  // no pattern left
  for (size_t pi = pat.size(); pi-- > 0;) {
    if (pat[pi] == "**") {
      row[n] = next[n];
      for (size_t si = n; si-- > 0;) row[si] = next[si] || row[si + 1];
    } else {
      row[n] = false;
      for (size_t si = 0; si < n; ++si) row[si] = next[si + 1] && globMatch(pat[pi], path[si]);
    }
    std::swap(row, next);
  }
  for (size_t start = 0; start < n; ++start)
    if (next[start]) return true;
  return false;
}

std::string normaliseOrRaw(const std::string& c) {
  if (auto n = normaliseName(c)) return *n;
  // Not UTF-8: no protected name (all valid UTF-8) can equal it; keep the bytes.
  return c;
}

}  // namespace

bool isValidUtf8Path(std::string_view s) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = utf8proc_ssize_t(s.size());
  while (left > 0) {
    utf8proc_int32_t cp;
    auto n = utf8proc_iterate(p, left, &cp);
    if (n <= 0 || cp < 0) return false;
    p += n;
    left -= n;
  }
  return true;
}

std::optional<std::string> normaliseName(std::string_view name) {
  if (!isValidUtf8Path(name)) return std::nullopt;
  if (name.empty()) return std::string();
  utf8proc_uint8_t* out = nullptr;
  auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(name.data()), utf8proc_ssize_t(name.size()),
                        &out,
                        utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT |
                                          UTF8PROC_CASEFOLD | UTF8PROC_IGNORE));
  if (n < 0) {
    std::free(out);
    return std::nullopt;
  }
  std::string result(reinterpret_cast<char*>(out), size_t(n));
  std::free(out);
  return result;
}

NameRules::NameRules(std::vector<NameRule> rules) {
  for (auto& r : rules) add(std::move(r));
}

void NameRules::add(NameRule rule) {
  auto parts = splitPath(rule.pattern, true);
  if (parts.empty()) throw std::invalid_argument("protected-name pattern is empty");
  std::vector<std::string> compiled;
  for (const auto& p : parts) {
    if (p == "." || p == "..") throw std::invalid_argument("protected-name pattern has . or ..: " + rule.pattern);
    if (p == "**") {
      compiled.push_back(p);
      continue;
    }
    auto n = normaliseName(p);
    if (!n || n->empty()) throw std::invalid_argument("protected-name pattern is not valid: " + rule.pattern);
    compiled.push_back(*n);
  }
  compiled_.push_back(std::move(compiled));
  rules_.push_back(std::move(rule));
}

std::vector<NameRule> NameRules::secretFiles() {
  const std::string why = "it may hold secrets";
  return {{".env", true, true, true, why}, {".env.*", true, true, true, why}};
}

std::vector<NameRule> NameRules::gitControl() {
  const std::string why = "git runs programs it names";
  return {
      {".git/**/hooks", true, false, true, why},
      {".git/**/config", true, false, true, why},
      {".git/**/config.worktree", true, false, true, why},
      // The entry itself: a file named .git can point git at another folder
      // (gitdir: ...) whose config and hooks are not protected.
      {".git", false, false, true, "a .git entry decides which hooks and config git uses"},
  };
}

std::vector<NameRule> NameRules::instructionFiles() {
  const std::string why = "it is read into the agent's instructions and the session is tainted";
  std::vector<NameRule> out;
  for (const char* n : {"AGENTS.md", "SOUL.md", "MEMORY.md", "USER.md", "CLAUDE.md", ".pi", ".agents"})
    out.push_back({n, true, false, true, why});
  return out;
}

NameRules NameRules::defaults(bool tainted) {
  NameRules r;
  for (auto& rule : secretFiles()) r.add(rule);
  for (auto& rule : gitControl()) r.add(rule);
  if (tainted)
    for (auto& rule : instructionFiles()) r.add(rule);
  return r;
}

const NameRule* NameRules::refusing(std::string_view relPath, bool write) const {
  std::vector<std::string> path;
  for (const auto& c : splitPath(relPath, true)) path.push_back(normaliseOrRaw(c));
  for (size_t r = 0; r < rules_.size(); ++r) {
    const auto& rule = rules_[r];
    if (!(write ? rule.denyWrite : rule.denyRead)) continue;
    if (matchesBelow(compiled_[r], path, rule.subtree)) return &rule;
  }
  return nullptr;
}

}  // namespace pine::sandbox
