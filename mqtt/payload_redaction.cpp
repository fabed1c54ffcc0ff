#include "mqtt/payload_redaction.h"

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/json_depth.h"
#include "common/outside_json.h"

namespace pine::mqtt {
namespace {

// Starts, after a byte-order mark and white space, as a JSON object, array or string does.
bool looksLikeJson(std::string_view p) {
  if (p.substr(0, 3) == "\xEF\xBB\xBF") p.remove_prefix(3);
  size_t i = p.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && (p[i] == '{' || p[i] == '[' || p[i] == '"');
}

}  // namespace

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
  // JSON that does not parse (cut short, text after it, a NUL, a bad byte) is still read as JSON:
  // its strings' escapes decoded, as pine-egress reads such a body. The JSON-aware redaction
  // hides at least what the plain one does.
  if (looksLikeJson(payload)) {
    std::string redacted = known.redact(payload, redact::Format::kJson);
    if (redacted != payload) return redacted;
  }
  if (known.find(payload).empty()) return payload;
  return known.redact(payload, redact::Format::kPlain);
}

}  // namespace pine::mqtt
