#include "mqtt/payload_redaction.h"

#include <nlohmann/json.hpp>

#include "common/json_depth.h"
#include "common/outside_json.h"

namespace pine::mqtt {

std::string redactedPayload(std::string payload, const redact::Redactor& known) {
  // Without a backslash the parsed strings are the bytes as written: the raw scan is exact, and a
  // JSON text stays JSON through the JSON-aware redaction.
  if (payload.find('\\') != std::string::npos && jsonNestingDepth(payload) <= kMaxOutsideJsonDepth) {
    nlohmann::json parsed = parseOutsideJson(payload);
    if (!parsed.is_discarded()) {
      // The form the broker stores, whose strings the JSON-aware redaction reads decoded.
      std::string stored = parsed.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      std::string redacted = known.redact(stored, redact::Format::kJson);
      if (redacted != stored) return redacted;
      if (known.find(payload).empty()) return payload;  // nothing to hide: the bytes as sent
    }
  }
  if (known.find(payload).empty()) return payload;
  nlohmann::json parsed = parseOutsideJson(payload);
  return known.redact(payload, parsed.is_discarded() ? redact::Format::kPlain : redact::Format::kJson);
}

}  // namespace pine::mqtt
