// The path jail's name rules: patterns compiled from any bytes, paths matched
// against them, names normalised. Properties: no crash; a bad pattern is refused
// with std::invalid_argument only; answers are deterministic; normalisation is a
// fixpoint; and on small inputs the matcher agrees with a tiny recursive reference
// written straight from the documented meaning (name_rules.h).
//
// Input: two header bytes (number of rules, each rule's subtree/denyRead/denyWrite
// bits), then '\n'-separated lines: the rules' patterns first, then paths.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "sandbox/jail/name_rules.h"

using pine::sandbox::NameRule;
using pine::sandbox::NameRules;
using pine::sandbox::normaliseName;

namespace {

std::vector<std::string> jailFuzzSplit(std::string_view s, char sep, bool dropEmpty) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(sep, i);
    if (j == std::string_view::npos) j = s.size();
    if (j > i || !dropEmpty) out.emplace_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// '*' is any run of bytes, everything else itself.
bool refGlob(std::string_view p, std::string_view s) {
  if (p.empty()) return s.empty();
  if (p[0] == '*') return refGlob(p.substr(1), s) || (!s.empty() && refGlob(p, s.substr(1)));
  return !s.empty() && p[0] == s[0] && refGlob(p.substr(1), s.substr(1));
}

// Pattern parts [pi..] against path parts [si..]; "**" takes any number of parts.
bool refParts(const std::vector<std::string>& pat, size_t pi, const std::vector<std::string>& path, size_t si,
              bool subtree) {
  if (pi == pat.size()) return subtree || si == path.size();
  if (pat[pi] == "**") {
    for (size_t k = si; k <= path.size(); ++k)
      if (refParts(pat, pi + 1, path, k, subtree)) return true;
    return false;
  }
  return si < path.size() && refGlob(pat[pi], path[si]) && refParts(pat, pi + 1, path, si + 1, subtree);
}

// "Anywhere below the root": some start in the path.
bool refMatches(const std::vector<std::string>& pat, const std::vector<std::string>& path, bool subtree) {
  for (size_t start = 0; start < path.size(); ++start)
    if (refParts(pat, 0, path, start, subtree)) return true;
  return false;
}

std::string normOrRaw(const std::string& c) {
  auto n = normaliseName(c);
  return n ? *n : c;
}

// Small enough for the reference, which is exponential in the '*' of a part and the
// "**" of a pattern: C(10 + 6, 6) splits at most, each glob C(32 + 4, 4) at most.
bool small(const std::vector<std::string>& parts, size_t maxParts) {
  if (parts.size() > maxParts) return false;
  for (const auto& p : parts)
    if (p.size() > 32 || std::count(p.begin(), p.end(), '*') > 4) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const unsigned ruleCount = 1 + (data[0] & 3);
  const unsigned bits = data[1] | (unsigned(data[0] >> 2) << 8);
  std::vector<std::string> lines =
      jailFuzzSplit(std::string_view(reinterpret_cast<const char*>(data) + 2, size - 2), '\n', false);

  // Normalisation: deterministic, and normalising again changes nothing.
  for (const auto& line : lines) {
    auto once = normaliseName(line);
    auto again = normaliseName(line);
    FUZZ_CHECK(once == again, "normaliseName is not deterministic");
    if (once) {
      auto twice = normaliseName(*once);
      FUZZ_CHECK(twice.has_value(), "a normalised name is not valid UTF-8");
      FUZZ_CHECK(*twice == *once, "normaliseName is not a fixpoint");
    }
  }

  std::vector<NameRule> rules;
  for (unsigned r = 0; r < ruleCount && r < lines.size(); ++r) {
    const unsigned b = bits >> (3 * r);
    rules.push_back({lines[r], (b & 1) != 0, (b & 2) != 0, (b & 4) != 0, "r" + std::to_string(r)});
  }
  NameRules compiled;
  try {
    compiled = NameRules(rules);
  } catch (const std::invalid_argument&) {
    return 0;  // the documented refusal; anything else escapes and is a crash
  }
  FUZZ_CHECK(compiled.rules().size() == rules.size(), "a rule went missing");

  // The reference's view of the rules, compiled as name_rules.h says.
  std::vector<std::vector<std::string>> refPats;
  bool smallRules = true;
  for (const auto& r : rules) {
    std::vector<std::string> parts;
    for (const auto& p : jailFuzzSplit(r.pattern, '/', true)) parts.push_back(p == "**" ? p : *normaliseName(p));
    smallRules = smallRules && small(parts, 6);
    refPats.push_back(std::move(parts));
  }

  for (size_t i = rules.size(); i < lines.size() && i < rules.size() + 16; ++i) {
    const std::string& path = lines[i];
    for (bool write : {false, true}) {
      const NameRule* got = compiled.refusing(path, write);
      FUZZ_CHECK(got == compiled.refusing(path, write), "refusing is not deterministic");
      if (got) {
        FUZZ_CHECK(got >= compiled.rules().data() && got < compiled.rules().data() + compiled.rules().size(),
                   "refusing returned a rule that is not one of the rules");
        FUZZ_CHECK(write ? got->denyWrite : got->denyRead, "refusing returned a rule that allows this access");
      }
      std::vector<std::string> parts;
      for (const auto& c : jailFuzzSplit(path, '/', true)) parts.push_back(normOrRaw(c));
      if (!smallRules || !small(parts, 10)) continue;
      const NameRule* want = nullptr;
      for (size_t r = 0; r < rules.size() && !want; ++r)
        if ((write ? rules[r].denyWrite : rules[r].denyRead) && refMatches(refPats[r], parts, rules[r].subtree))
          want = &compiled.rules()[r];
      FUZZ_CHECK(got == want, "the matcher disagrees with the reference");
    }
  }
  return 0;
}
