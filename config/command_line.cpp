#include "config/command_line.h"

#include <cctype>
#include <cstdio>
#include <optional>
#include <string_view>

#include "common/outside_text.h"

namespace pine::config {
namespace {

bool plainWord(const std::string& w) {
  if (w.empty()) return false;
  for (unsigned char ch : w)
    if (!(std::isalnum(ch) || std::string_view("-_./=:,+@%").find(char(ch)) != std::string_view::npos)) return false;
  return true;
}

// The code point at w[i] (advancing i), or -1 for a byte that starts no valid, shortest UTF-8
// sequence (advancing one byte).
long nextCodePoint(const std::string& w, size_t& i) {
  unsigned char c = (unsigned char)w[i];
  if (c < 0x80) {
    ++i;
    return c;
  }
  int n = (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 0;
  long cp = c & (0x3f >> n);
  for (int k = 1; k <= n; ++k) {
    if (i + k >= w.size() || ((unsigned char)w[i + k] & 0xc0) != 0x80) n = 0;
    if (n == 0) break;
    cp = (cp << 6) | ((unsigned char)w[i + k] & 0x3f);
  }
  static const long kLeast[] = {0, 0x80, 0x800, 0x10000};
  if (n == 0 || cp < kLeast[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
    ++i;
    return -1;
  }
  i += n + 1;
  return cp;
}

// Characters a terminal or a web page does not show as themselves: controls, and the invisible
// ones that reorder or hide text (bidirectional overrides and isolates, zero-width marks).
bool hiddenCharacter(long cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || invisibleCodePoint((unsigned long)cp);
}

// A word with such characters, in the shell's $'...' quoting with each of them as an escape, so
// that the owner sees every character that runs (a byte that is not UTF-8 as \xHH).
std::optional<std::string> escapedWord(const std::string& w) {
  bool hidden = false;
  for (size_t i = 0; i < w.size() && !hidden;) hidden = hiddenCharacter(nextCodePoint(w, i));
  if (!hidden) return std::nullopt;
  std::string out = "$'";
  char buf[16];
  for (size_t i = 0; i < w.size();) {
    size_t at = i;
    long cp = nextCodePoint(w, i);
    if (cp < 0) {
      snprintf(buf, sizeof buf, "\\x%02x", (unsigned char)w[at]);
      out += buf;
    } else if (hiddenCharacter(cp)) {
      snprintf(buf, sizeof buf, cp < 0x100 ? "\\x%02lx" : "\\u%04lx", cp);
      out += buf;
    } else if (cp == '\'' || cp == '\\') {
      out += '\\';
      out += (char)cp;
    } else {
      out.append(w, at, i - at);
    }
  }
  return out + "'";
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
    if (auto escaped = escapedWord(w)) {
      out += *escaped;
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
