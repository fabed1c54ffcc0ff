// Configuration errors carry where (file:line:column and the key path), what was
// expected, and a hint. The loader collects all of them, not just the first, so
// one edit-check cycle fixes a whole file.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace pine::config {

struct ConfigError {
  std::string file;
  int line = 0;    // 1-based; 0 when the error concerns the file as a whole
  int column = 0;  // 1-based
  std::string keyPath;  // e.g. "limits.queuePerAgent", "sources[2].type"
  std::string message;
  std::string hint;  // e.g. "did you mean 'topic'?"

  // "file:line:column: keyPath: message (hint)"; parts that are empty are left out.
  std::string format() const;
};

// Every error on its own line, sorted by file, line and column.
std::string formatErrors(std::vector<ConfigError> errors);

// One load collects at most this many errors; past it a note says the rest were left
// out, and the readers skip the work of finding hints for them. A file with more is
// not a configuration being edited, and each hint can cost a look at every name.
inline constexpr std::size_t kMaxErrors = 200;
// Appends e; at kMaxErrors appends the note instead (once), then nothing.
void addError(std::vector<ConfigError>& errors, ConfigError e);
inline bool errorsFull(const std::vector<ConfigError>& errors) { return errors.size() >= kMaxErrors; }

// Edit distance with transpositions (optimal string alignment), case-sensitive.
std::size_t editDistance(std::string_view a, std::string_view b);

// The nearest candidate when it is close enough to be a typo: same letters
// ignoring case and '_'/'-' (base_url -> baseUrl), or within a distance of
// about a third of the word. Empty when nothing is near, and when comparing with
// every candidate would take more than kMaxHintCells steps of edit distance (a
// guess among so many is no help, and a file may name thousands).
inline constexpr std::size_t kMaxHintCells = 400000;
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

// "did you mean 'x'?" or empty.
std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates);

// What exists, for a name that does not: "did you mean 'x'? the models are: a, b" (the guess only
// when near; at most 20 names, then how many more), or "there are no models". plural: "models".
std::string whatExists(std::string_view word, const std::vector<std::string>& candidates, std::string_view plural);

}  // namespace pine::config
