// The small string tests the guard's files share (one definition, so that the
// files can also be compiled as one unit).
#pragma once
#include <cctype>
#include <string>
#include <string_view>

namespace pine::guard {

inline bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
inline bool endsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace pine::guard
