#include "config/command_line.h"

#include <cctype>
#include <string_view>

namespace pine::config {
namespace {

bool plainWord(const std::string& w) {
  if (w.empty()) return false;
  for (unsigned char ch : w)
    if (!(std::isalnum(ch) || std::string_view("-_./=:,+@%").find(char(ch)) != std::string_view::npos)) return false;
  return true;
}

}  // namespace

std::string shownCommandLine(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& w : argv) {
    if (!out.empty()) out += ' ';
    if (plainWord(w)) {
      out += w;
      continue;
    }
    // Single quotes keep everything but a single quote, which is closed, escaped and reopened.
    out += '\'';
    for (char ch : w) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    out += '\'';
  }
  return out;
}

}  // namespace pine::config
