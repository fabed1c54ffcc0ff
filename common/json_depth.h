// How deep a JSON text nests ('[' and '{' outside strings), found without parsing it: a reader
// of bytes from outside refuses a text nested deeper than any honest answer before a parser,
// a copy or a dump walks it recursively.
#pragma once
#include <string_view>

namespace pine {

// Deeper than any honest message: a reader of outside JSON keeps deeper text as a string.
inline constexpr int kMaxOutsideJsonDepth = 64;

inline int jsonNestingDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\') ++i;
      else if (c == '"') inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace pine
