// What counts as a valid identifier where one process names something to another.
// These are checked on every side that receives them, never only by the sender.
#pragma once
#include <string_view>

namespace pine {

// Agent ids: [a-z0-9_-], 1 to 64 bytes, not starting with '-' (they become folder names and argv items).
inline bool isValidAgentId(std::string_view s) {
  if (s.empty() || s.size() > 64 || s[0] == '-') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

// Task ids: [A-Za-z0-9_.-], 1 to 64 bytes, not starting with '-' or '.'.
inline bool isValidTaskId(std::string_view s) {
  if (s.empty() || s.size() > 64 || s[0] == '-' || s[0] == '.') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
          c == '.'))
      return false;
  return true;
}

// State keys: [A-Za-z0-9_.:/-], 1 to 128 bytes, not starting with '/', '.' or '-', no "..", "//" or
// trailing '/': they become event topics (state/<key>) and URL paths (/v1/state/<key>).
inline bool isValidStateKey(std::string_view s) {
  if (s.empty() || s.size() > 128 || s[0] == '/' || s[0] == '.' || s[0] == '-' || s.find("..") != std::string_view::npos ||
      s.find("//") != std::string_view::npos || s.back() == '/')
    return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
          c == '.' || c == '/' || c == ':'))
      return false;
  return true;
}

}  // namespace pine
