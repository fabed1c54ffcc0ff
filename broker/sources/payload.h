// A received message's bytes as the JSON text of an event's payload.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/json_depth.h"

namespace pine::sources {

// Larger messages are dropped (with a log line), not truncated: half a JSON
// document is worth less than none.
inline constexpr size_t kMaxPayloadBytes = 256 * 1024;
// Deeper JSON is kept as a string: nesting this deep is no data anyone sends,
// and printing it again would recurse once per level.
inline constexpr int kMaxJsonDepth = kMaxOutsideJsonDepth;

// Whether the brackets of `s` (outside its strings) nest at most `limit` deep; checked before a
// parse, so that a hostile "[[[[..." never reaches the recursive printer.
bool jsonNestingWithin(std::string_view s, int limit);

// The message as JSON if it parses (re-serialised, compact), else as a JSON
// string with invalid UTF-8 replaced by U+FFFD. nullopt when over the cap.
std::optional<std::string> payloadToJson(std::string_view bytes);

}  // namespace pine::sources
