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

// Every JSON escape in `p` decoded, wherever it stands (\uXXXX, surrogate pairs, \n, \", ...); an
// escape that is not one stays as written.
std::string decodeEscapes(std::string_view p) {
  auto hex4 = [&](size_t at, unsigned& v) {
    if (at + 4 > p.size()) return false;
    v = 0;
    for (size_t k = at; k < at + 4; ++k) {
      char c = p[k];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else return false;
    }
    return true;
  };
  auto utf8 = [](std::string& out, unsigned cp) {
    if (cp < 0x80) out += char(cp);
    else if (cp < 0x800) out += char(0xC0 | (cp >> 6)), out += char(0x80 | (cp & 0x3F));
    else if (cp < 0x10000) out += char(0xE0 | (cp >> 12)), out += char(0x80 | ((cp >> 6) & 0x3F)), out += char(0x80 | (cp & 0x3F));
    else
      out += char(0xF0 | (cp >> 18)), out += char(0x80 | ((cp >> 12) & 0x3F)), out += char(0x80 | ((cp >> 6) & 0x3F)),
          out += char(0x80 | (cp & 0x3F));
  };
  std::string out;
  out.reserve(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '\\' || i + 1 >= p.size()) {
      out += p[i];
      continue;
    }
    char e = p[i + 1];
    unsigned cp = 0, low = 0;
    switch (e) {
      case 'n': out += '\n'; ++i; continue;
      case 't': out += '\t'; ++i; continue;
      case 'r': out += '\r'; ++i; continue;
      case 'b': out += '\b'; ++i; continue;
      case 'f': out += '\f'; ++i; continue;
      case '"': case '\\': case '/': out += e; ++i; continue;
      case 'u':
        if (!hex4(i + 2, cp)) break;
        i += 5;
        if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < p.size() && p[i + 1] == '\\' && p[i + 2] == 'u' &&
            hex4(i + 3, low) && low >= 0xDC00 && low < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          i += 6;
        }
        utf8(out, cp);
        continue;
      default: break;
    }
    out += p[i];
  }
  return out;
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
    // The JSON-aware reading stops decoding at the first syntax error; every escape decoded, the
    // text shows a value hidden after one ({"x": tru, "a": "...\u0050..."}). It is then stored
    // decoded and redacted: it is not JSON, so the broker keeps it as text anyway.
    std::string decoded = decodeEscapes(payload);
    if (decoded != payload && !known.find(decoded).empty()) return known.redact(decoded);
    // And the plain reading over the JSON one's result: what it missed after an error is found.
    std::string redacted = known.redact(known.redact(payload, redact::Format::kJson));
    if (redacted != payload) return redacted;
  }
  if (known.find(payload).empty()) return payload;
  return known.redact(payload, redact::Format::kPlain);
}

}  // namespace pine::mqtt
