// A payload an MQTT server delivered (mqtt/payload_redaction.h), any bytes, with the source's
// login value known: nothing may crash (ASan, UBSan), throw or run without bound, and what goes
// on to the broker never holds the value as written.
#include <cstddef>
#include <cstdint>
#include <string>

#include "mqtt/payload_redaction.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const pine::redact::Redactor known({"S3cr3tMqttPw-7f3a9"});
  const std::string in(reinterpret_cast<const char*>(data), size);
  const std::string out = pine::mqtt::redactedPayload(in, known);
  FUZZ_CHECK(out.find("S3cr3tMqttPw-7f3a9") == std::string::npos, "the login value passed as written");
  return 0;
}
