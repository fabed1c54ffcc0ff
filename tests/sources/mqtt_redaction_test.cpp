// pine-mqtt's payload redaction (mqtt/payload_redaction.h) against the broker's reading of the
// same bytes (broker/sources/payload.h): whatever the broker would store holds no login value,
// however the payload writes it; a payload that holds none reaches the broker as it was sent.
#include <doctest/doctest.h>

#include <string>

#include "broker/sources/payload.h"
#include "mqtt/payload_redaction.h"

namespace {

const std::string kPassword = "S3cr3tMqttPw-7f3a9", kUser = "pineuser-Qw81z";
const std::string kBom = "\xef\xbb\xbf";

// "\u0053\u0033..." for every character of s.
std::string allEscaped(const std::string& s) {
  std::string out;
  char buf[8];
  for (unsigned char c : s) {
    std::snprintf(buf, sizeof buf, "\\u%04x", c);
    out += buf;
  }
  return out;
}

// What the broker stores for what pine-mqtt hands it.
std::string stored(const std::string& payload) {
  const pine::redact::Redactor known({kPassword, kUser});
  return pine::sources::payloadToJson(pine::mqtt::redactedPayload(payload, known)).value();
}

}  // namespace

TEST_CASE("mqtt redaction: a login value the broker would decode is redacted however the JSON writes it") {
  std::string dashEscaped = kPassword;
  dashEscaped.replace(dashEscaped.find('-'), 1, "\\u002d");
  const std::string cases[] = {
      "\"" + allEscaped(kPassword) + "\"",                        // a whole JSON text that is one string
      "  \"" + dashEscaped + "\"",                                // the same after spaces
      kBom + "\"" + allEscaped(kPassword) + "\"",                 // after a byte-order mark
      kBom + "{\"a\":\"" + allEscaped(kPassword) + "\"}",         // an object after one
      kBom + "[\"pineuser\\u002dQw81z\"]",                        // the user name, in an array
      "{\"" + allEscaped(kPassword) + "\": 1}",                   // as a key
      "{\"a\": [1, {\"b\": \"x " + dashEscaped + " y\"}]}",       // inside a longer string, nested
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    CAPTURE(cases[i]);
    const std::string s = stored(cases[i]);
    CHECK(s.find(kPassword) == std::string::npos);
    CHECK(s.find(kUser) == std::string::npos);
    CHECK(s.find("[redacted]") != std::string::npos);
  }
  // A password of digits, written as a number the broker stores in another form.
  const pine::redact::Redactor digits({"12345678"});
  for (const char* number : {"[1.2345678e7]", "{\"pin\": 123456.78e2}", "12345678e0"}) {
    CAPTURE(number);
    const std::string s = pine::sources::payloadToJson(pine::mqtt::redactedPayload(number, digits)).value();
    CHECK(s.find("12345678") == std::string::npos);  // before: [12345678.0]
  }
  // Before: only a text starting with { or [ was read as JSON (the first four cases stored the
  // password), and the broker's reading skips a byte-order mark (the next two).
}

TEST_CASE("mqtt redaction: JSON that does not parse still has its escaped login value redacted") {
  // The broker stores such a payload as a string, escapes and all; a reader that decodes them
  // (a model does) would read the password. pine-egress redacts the same bytes; now so does pine-mqtt.
  const std::string esc = "S3cr3tMqttPw\\u002d7f3a9";  // the password with its '-' escaped
  const std::string cases[] = {
      "{\"a\":\"" + esc + "\", ",                   // cut short
      "{\"a\":\"" + esc + "\"} and more",           // text after it
      "{\"a\":1}\n{\"a\":\"" + esc + "\"}",          // two documents
      "{\"a\":\"" + esc + "\"}" + std::string(1, '\0'),  // a NUL after it
      "{\"b\":\"\xff\",\"a\":\"" + esc + "\"}",      // a byte that is not UTF-8
      "{\"b\":\"\\ud800\",\"a\":\"" + esc + "\"}",   // a lone surrogate before it
      "{\"n\":1e99999,\"a\":\"" + esc + "\"}",        // a number out of range
      // A syntax error before it, where the JSON-aware reading stops decoding:
      "{\"x\": tru, \"a\":\"" + esc + "\"}", "{'y': 1, \"a\":\"" + esc + "\"}", "{\"x\":1,, \"a\":\"" + esc + "\"}",
      "{x: 1, \"a\":\"" + esc + "\"}", "{\"x\": NaN, \"a\":\"" + esc + "\"}", "{\"x\": 01, \"a\":\"" + esc + "\"}",
      "{/* c */ \"a\":\"" + esc + "\"}", "{\"x\": \"\\q\", \"a\":\"" + esc + "\"}", "[word, \"" + esc + "\"]",
  };
  const pine::redact::Redactor known({kPassword, kUser});
  for (const auto& c : cases) {
    CAPTURE(c);
    const std::string out = pine::mqtt::redactedPayload(c, known);
    CHECK(out.find(esc) == std::string::npos);
    CHECK(out.find("[redacted]") != std::string::npos);
  }
  // The twins: the same shapes without the value reach the broker as sent.
  for (const std::string& c : {std::string("{\"a\":\"x\\u002dy\", "), std::string("{\"a\":\"x\"} and more")}) {
    CAPTURE(c);
    CHECK(pine::mqtt::redactedPayload(c, known) == c);
  }
}

TEST_CASE("mqtt redaction: a payload without a login value reaches the broker as sent; JSON stays JSON") {
  const pine::redact::Redactor known({kPassword, kUser});
  const std::string plain[] = {
      "\"caf\\u00e9 \\/ open\"", kBom + "{\"door\":\"open\\n\"}", "{\"n\": 1.50}", "no json at all \\u0041",
      std::string(70, '[') + "\\u0041",  // deeper than the broker reads as JSON: its bytes
  };
  for (const auto& p : plain) {
    CAPTURE(p);
    CHECK(pine::mqtt::redactedPayload(p, known) == p);
  }
  // A value in plain bytes is still found, in JSON and out of it; JSON stays parseable.
  CHECK(stored("{\"p\": \"" + kPassword + "\", \"n\": 2}") == "{\"n\":2,\"p\":\"[redacted]\"}");
  CHECK(stored("plain " + kPassword) == "\"plain [redacted]\"");
  // Deeper than the broker parses, with the value escaped: the broker keeps the bytes as a string,
  // escapes and all, and no reader of the event decodes them; written plainly it is found.
  CHECK(stored(std::string(70, '[') + kPassword).find(kPassword) == std::string::npos);
}
