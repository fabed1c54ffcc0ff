// What pine-mqtt hands the broker of a message's payload: the login's values and secret-shaped
// strings redacted as the broker will read the payload. The broker stores a payload that parses
// as JSON (broker/sources/payload.cpp: common/outside_json.h, within kMaxOutsideJsonDepth) by its
// parsed value, so an escape ("S3cret\u002dpw"), a top-level string, a byte-order mark before
// the text or a number the broker writes anew (1.2345678e7 as 12345678.0) hides a value from a
// scan of the raw bytes and shows it in the event. Such a payload is redacted in the form the
// broker stores (strings decoded); any other by its bytes.
#pragma once
#include <string>

#include "redact/redactor.h"

namespace pine::mqtt {

std::string redactedPayload(std::string payload, const redact::Redactor& known);

}  // namespace pine::mqtt
