#include "mqtt/payload_redaction.h"

#include <nlohmann/json.hpp>

#include "common/json_depth.h"
#include "common/outside_json.h"

namespace pine::mqtt {

std::string redactedPayload(std::string payload, const redact::Redactor& known) {
  // Every payload that parses: its strings may be escaped, and its numbers are written anew by
  // the broker ([1.2345678e7] is stored as [12345678.0]), so only the stored form tells.
  if (jsonNestingDepth(payload) <= kMaxOutsideJsonDepth) {
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
