// Protected names for the path jail: .env, what makes git run programs, and
// (tainted sessions) the instruction files read into the prompt. Names are
// compared after Unicode NFKC normalisation, case folding and removal of
// default-ignorable code points, because macOS file systems fold case and
// treat look-alike spellings as the same name.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pine::sandbox {

// NFKC + case fold + default ignorables removed. nullopt when `name` is not
// valid UTF-8.
std::optional<std::string> normaliseName(std::string_view name);

// True when `s` is valid UTF-8 (no NUL check: callers refuse NUL first).
bool isValidUtf8Path(std::string_view s);

struct NameRule {
  // Path components separated by '/'. A component may hold '*' (any run of
  // characters); a component "**" stands for any number of components. The
  // pattern matches anywhere in the path below its root: ".git/**/hooks"
  // matches "a/.git/hooks" and ".git/modules/m/hooks".
  std::string pattern;
  bool subtree = true;     // also everything beneath the matched entry
  bool denyRead = false;   // refuse reading, listing and stat as well
  bool denyWrite = true;   // refuse opening for write and creating
  std::string reason;      // said in the refusal
};

class NameRules {
 public:
  NameRules() = default;
  // Throws std::invalid_argument for an empty pattern, an empty, "." or ".."
  // component, or one that is not valid UTF-8.
  explicit NameRules(std::vector<NameRule> rules);
  void add(NameRule rule);

  static std::vector<NameRule> secretFiles();       // .env, .env.*: no read, no write
  static std::vector<NameRule> gitControl();        // .git hooks/config at any depth; the .git entry
  static std::vector<NameRule> instructionFiles();  // AGENTS.md SOUL.md MEMORY.md USER.md CLAUDE.md .pi/ .agents/
  // secretFiles + gitControl, plus instructionFiles when tainted.
  static NameRules defaults(bool tainted);

  // The first rule that refuses this access to `relPath` ('/'-separated,
  // relative to the root it lies under, no "." or ".."), or nullptr.
  const NameRule* refusing(std::string_view relPath, bool write) const;
  const std::vector<NameRule>& rules() const { return rules_; }

 private:
  std::vector<NameRule> rules_;
  std::vector<std::vector<std::string>> compiled_;  // normalised components per rule
};

}  // namespace pine::sandbox
