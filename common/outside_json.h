// JSON text from outside, parsed. nlohmann's lexer takes a NUL byte for the end of its input (as
// in a C string), so `{"a":1}<NUL>anything` parsed as the object before the NUL, and what came
// after it was dropped without a word: a program's line, a device's message or a webhook's body
// stored as less than was sent. Text with a NUL in it is not JSON (RFC 8259 allows none outside
// strings, and none unescaped in them): the result is discarded, as for any text that is not.
#pragma once
#include <nlohmann/json.hpp>
#include <string_view>

namespace pine {

inline nlohmann::json parseOutsideJson(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

}  // namespace pine
