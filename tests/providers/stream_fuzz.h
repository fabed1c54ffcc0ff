// What the stream decoders' fuzz targets (tests/fuzz/{openai,anthropic}_stream_fuzz.cpp)
// check for any bytes: feed() never throws, finish() throws only ProviderError, every
// count is in 0..kMaxCount, every string is valid UTF-8 (error messages included), the
// onText pieces add up to the text, and the outcome is the same however the body is
// split. Header-only: the targets link nothing but the providers library.
#pragma once
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "tests/fuzz/fuzz_check.h"
#include "providers/provider.h"

namespace pine::model::fuzz {

inline bool validUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

inline bool countOk(long long v) { return v >= 0 && v <= kMaxCount; }

// One decoding, as text to compare: the Turn or the error, every field.
inline std::string decodeOnce(const Provider& provider, const std::vector<std::string_view>& pieces) {
  auto d = provider.decoder();
  std::string fromOnText;
  d->onText = [&](std::string_view t) {
    FUZZ_CHECK(validUtf8(t), "onText got a torn or invalid UTF-8 piece");
    fromOnText.append(t);
  };
  bool failedEarly = false;
  for (auto p : pieces) {
    try {
      d->feed(p);
    } catch (...) {
      FUZZ_CHECK(false, "feed() threw");
    }
    failedEarly = failedEarly || d->failed();
  }
  try {
    Turn t = d->finish();
    FUZZ_CHECK(!failedEarly, "failed() was true but finish() returned a turn");
    const Usage& u = t.usage;
    FUZZ_CHECK(countOk(u.input) && countOk(u.output) && countOk(u.cacheRead) && countOk(u.cacheWrite),
               "a usage count is outside 0..kMaxCount");
    FUZZ_CHECK(fromOnText == t.text, "the onText pieces do not add up to the text");
    FUZZ_CHECK(validUtf8(t.text) && validUtf8(t.reasoning) && validUtf8(t.stopReason), "invalid UTF-8 in the turn");
    FUZZ_CHECK(!t.stopReason.empty(), "a turn without a stop reason");
    std::string out = "turn text=" + t.text + "\nreasoning=" + t.reasoning + "\nstop=" + t.stopReason +
                      "\nusage=" + std::to_string(u.input) + "/" + std::to_string(u.output) + "/" +
                      std::to_string(u.cacheRead) + "/" + std::to_string(u.cacheWrite);
    for (const auto& c : t.toolCalls) {
      FUZZ_CHECK(!c.name.empty() && !c.id.empty() && !c.arguments.empty(), "a tool call without name, id or arguments");
      FUZZ_CHECK(validUtf8(c.id) && validUtf8(c.name) && validUtf8(c.arguments), "invalid UTF-8 in a tool call");
      out += "\ncall " + c.id + " " + c.name + " " + c.arguments;
    }
    return out;
  } catch (const ProviderError& e) {
    FUZZ_CHECK(validUtf8(e.what()), "an error message that is not valid UTF-8");
    FUZZ_CHECK(e.kind != ProviderError::Kind::Status, "a decoder error of kind Status");
    return "error " + std::to_string(static_cast<int>(e.kind)) + " " + e.what();
  } catch (...) {
    FUZZ_CHECK(false, "finish() threw something other than ProviderError");
  }
  return {};
}

// Split points derived from the input itself, so a crash replays exactly.
inline std::vector<std::string_view> splitByInput(std::string_view body) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : body) h = (h ^ c) * 1099511628211ull;
  std::vector<std::string_view> pieces;
  std::size_t pos = 0;
  while (pos < body.size()) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    // Mostly short pieces (inside tokens and characters), sometimes long ones.
    const std::size_t len = 1 + static_cast<std::size_t>((h >> 33) % ((h >> 20) % 4 == 0 ? 256 : 7));
    pieces.push_back(body.substr(pos, len));
    pos += pieces.back().size();
  }
  return pieces;
}

// The whole property for one body.
inline void checkBody(const Provider& provider, std::string_view body) {
  const std::string whole = decodeOnce(provider, {body});
  FUZZ_CHECK(decodeOnce(provider, splitByInput(body)) == whole, "a different outcome when split by the input");
  if (body.size() <= 256) {  // splitByInput covers longer bodies in short pieces
    std::vector<std::string_view> bytes;
    for (std::size_t i = 0; i < body.size(); ++i) bytes.push_back(body.substr(i, 1));
    FUZZ_CHECK(decodeOnce(provider, bytes) == whole, "a different outcome one byte at a time");
  }
}

// The same bytes as a non-2xx answer: always a ProviderError of kind Status, never a throw.
inline void checkErrorBody(const Provider& provider, std::string_view body) {
  const int status = body.empty() ? 500 : 400 + static_cast<unsigned char>(body[0]) % 200;
  try {
    const ProviderError e = provider.errorFor(status, {{"Retry-After", std::string(body.substr(0, 40))}}, body);
    FUZZ_CHECK(e.kind == ProviderError::Kind::Status && e.status == status, "errorFor gave the wrong kind or status");
    FUZZ_CHECK(e.retryAfterSec >= -1 && e.retryAfterSec <= 86400, "retryAfterSec outside -1..86400");
    FUZZ_CHECK(validUtf8(e.what()), "an HTTP error message that is not valid UTF-8");
  } catch (...) {
    FUZZ_CHECK(false, "errorFor threw");
  }
}

}  // namespace pine::model::fuzz
