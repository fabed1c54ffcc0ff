#include "broker/sources/payload.h"

#include <nlohmann/json.hpp>

#include "common/outside_json.h"

namespace pine::sources {
bool jsonNestingWithin(std::string_view s, int limit) { return jsonNestingDepth(s) <= limit; }

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
