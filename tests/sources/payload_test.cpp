// A message's bytes as event payload JSON: parsed when JSON, else a string; capped.
#include <doctest/doctest.h>

#include "mqtt/job/mqtt_job.h"
#include "broker/sources/payload.h"

using pine::sources::kMaxPayloadBytes;
using pine::sources::payloadToJson;

TEST_CASE("payload: JSON stays JSON, anything else becomes a JSON string") {
  struct Row { std::string in, out; };
  const Row rows[] = {
      {R"({"t": 21.5, "on": true})", R"({"on":true,"t":21.5})"},
      {"[1, 2]", "[1,2]"},
      {"42", "42"},
      {"true", "true"},
      {"\"quoted\"", "\"quoted\""},
      {"hello world", "\"hello world\""},
      {"", "\"\""},
      {"{broken", "\"{broken\""},
      {"line\nbreak \"q\"", "\"line\\nbreak \\\"q\\\"\""},
      {"caf\xc3\xa9", "\"caf\xc3\xa9\""},                                  // valid UTF-8 kept
      {"\xff\xfe" "abc", "\"\xef\xbf\xbd\xef\xbf\xbd" "abc\""},           // invalid bytes become U+FFFD
      {"{\"k\": \"\xff\"}", "\"{\\\"k\\\": \\\"\xef\xbf\xbd\\\"}\""},     // JSON with invalid UTF-8: a string
  };
  for (const auto& r : rows) {
    CAPTURE(r.in);
    auto got = payloadToJson(r.in);
    REQUIRE(got);
    CHECK(*got == r.out);
  }
}

TEST_CASE("payload: bytes with a NUL are a string, all of them; an escaped NUL in JSON is JSON") {
  // The parser stopped at a NUL: {"a":1} was stored and what followed it was lost.
  using namespace std::string_literals;
  CHECK(*payloadToJson("{\"a\":1}\0tail"s) == "\"{\\\"a\\\":1}\\u0000tail\"");
  CHECK(*payloadToJson("1\0"s) == "\"1\\u0000\"");
  CHECK(*payloadToJson(R"({"a":"x\u0000y"})") == R"({"a":"x\u0000y"})");
}

TEST_CASE("payload: nesting deeper than 64 is kept as a string, 64 is JSON") {
  std::string ok = std::string(64, '[') + std::string(64, ']');
  CHECK(*payloadToJson(ok) == ok);
  std::string deep = std::string(65, '[') + std::string(65, ']');
  CHECK(*payloadToJson(deep) == "\"" + deep + "\"");
  std::string hostile(kMaxPayloadBytes, '[');
  CHECK(payloadToJson(hostile)->size() == kMaxPayloadBytes + 2);
  // brackets inside strings do not count
  std::string inString = "[\"" + std::string(100, '[') + "\"]";
  CHECK(*payloadToJson(inString) == inString);
}

TEST_CASE("payload: larger than 256 KiB is dropped, exactly 256 KiB is kept") {
  CHECK(payloadToJson(std::string(kMaxPayloadBytes, 'x')).has_value());
  CHECK_FALSE(payloadToJson(std::string(kMaxPayloadBytes + 1, 'x')).has_value());
}

TEST_CASE("mqtt address: host and port, defaults, and what is refused") {
  using pine::mqtt::MqttAddress;
  using pine::mqtt::parseMqttUrl;
  struct Row { const char* url; bool ok; const char* host; int port; bool tls; const char* why; };
  const Row rows[] = {
      {"mqtt://127.0.0.1:1884", true, "127.0.0.1", 1884, false, ""},
      {"mqtt://broker.lan", true, "broker.lan", 1883, false, ""},
      {"mqtt://broker.lan/", true, "broker.lan", 1883, false, ""},
      {"mqtts://broker.example", true, "broker.example", 8883, true, ""},
      {"mqtt://[::1]:1999", true, "::1", 1999, false, ""},
      {"mqtt://user:pw@broker.lan", false, "", 0, false, "credentials"},
      {"mqtt://broker.lan:0", false, "", 0, false, "port"},
      {"mqtt://broker.lan:99999", false, "", 0, false, "port"},
      {"mqtt://broker.lan:", false, "", 0, false, "port"},
      {"mqtt://broker.lan:x1", false, "", 0, false, "port"},
      {"mqtt://", false, "", 0, false, "no host"},
      {"mqtt://broker.lan/path", false, "", 0, false, "path"},
      {"http://broker.lan", false, "", 0, false, "not an MQTT address"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.url);
    MqttAddress a;
    auto why = parseMqttUrl(r.url, a);
    CHECK(why.has_value() == !r.ok);
    if (r.ok) {
      CHECK(a.host == r.host);
      CHECK(a.port == r.port);
      CHECK(a.tls == r.tls);
    } else if (why) {
      CHECK(why->find(r.why) != std::string::npos);
    }
  }
}
