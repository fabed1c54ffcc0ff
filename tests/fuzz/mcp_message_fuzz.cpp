// What an MCP server sends, over any bytes (broker/mcp/): parseMessage on the raw bytes, and
// resultToText and pinsFromJson on them when they parse (shallowly) as JSON. Nothing may crash
// or throw; an Invalid message says why; a Request or Notification has a method; a Request,
// Result or Error has a string or integer id; a result's text is at most the cap plus the
// "cut" line, and is marked truncated exactly when it was cut.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "broker/mcp/client.h"
#include "broker/mcp/json_rpc.h"
#include "broker/mcp/tool_pins.h"
#include "common/json_depth.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  using pine::mcp::Message;
  try {
    Message m = pine::mcp::parseMessage(bytes);
    if (m.kind == Message::Kind::Invalid) FUZZ_CHECK(!m.problem.empty(), "an Invalid message without a reason");
    if (m.kind == Message::Kind::Request || m.kind == Message::Kind::Notification)
      FUZZ_CHECK(!m.method.empty(), "a request or notification without a method");
    if (m.kind == Message::Kind::Request || m.kind == Message::Kind::Result || m.kind == Message::Kind::Error)
      FUZZ_CHECK(m.id.is_string() || m.id.is_number_integer() || m.id.is_number_unsigned(), "an id of the wrong type");
    if (pine::jsonNestingDepth(bytes) <= pine::mcp::kMaxNesting) {
      auto j = nlohmann::json::parse(bytes, nullptr, false);
      if (!j.is_discarded()) {
        size_t cap = 1 + pine::fuzz::hashOf(bytes) % 256;
        auto r = pine::mcp::resultToText(j, cap);
        if (r.truncated) FUZZ_CHECK(r.text.compare(cap, 11, "\n... (cut: ") == 0, "a cut result without its cut line");
        else FUZZ_CHECK(r.text.size() <= cap, "a result's text is over its cap and not marked cut");
        FUZZ_CHECK(r.text.size() <= cap + 64, "a result's text is over its cap");
        pine::mcp::pinsFromJson(j);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "threw: %s\n", e.what());
    FUZZ_CHECK(false, "reading a server's message threw");
  }
  return 0;
}
