#include "broker/sources/payload.h"

#include <nlohmann/json.hpp>

#include "common/outside_json.h"

namespace pine::sources {
bool jsonNestingWithin(std::string_view s, int limit) {
  int depth = 0;
  bool inString = false, escaped = false;
  for (char c : s) {
    if (inString) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

std::optional<std::string> payloadToJson(std::string_view bytes) {
  using nlohmann::json;
  if (bytes.size() > kMaxPayloadBytes) return std::nullopt;
  if (jsonNestingWithin(bytes, kMaxJsonDepth)) {
    json parsed = parseOutsideJson(bytes);
    if (!parsed.is_discarded()) return parsed.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return json(std::string(bytes)).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace pine::sources
