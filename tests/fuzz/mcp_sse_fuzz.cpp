// The event-stream parser of pine-mcp-remote (mcp_remote/sse), over any bytes a remote MCP
// server sends: nothing may crash or throw; no event's data is over its cap; where the bytes
// are split between reads changes nothing (the same events, the same error, in the same order).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mcp_remote/sse.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  pine::fuzz::Rng rng{pine::fuzz::hashOf(bytes)};
  const size_t maxLine = 1 + rng.next() % 512, maxData = 1 + rng.next() % 1024;
  using pine::mcp_remote::SseEvent;
  using pine::mcp_remote::SseParser;

  SseParser whole(maxLine, maxData);
  std::vector<SseEvent> a;
  bool okWhole = whole.feed(bytes, a);

  SseParser split(maxLine, maxData);
  std::vector<SseEvent> b;
  bool okSplit = true;
  for (size_t at = 0; at < bytes.size() && okSplit;) {
    size_t n = 1 + rng.next() % 16;
    okSplit = split.feed(bytes.substr(at, n), b);
    at += n;
  }
  FUZZ_CHECK(okWhole == okSplit, "splitting the bytes changed whether the stream was accepted");
  FUZZ_CHECK(whole.error() == split.error(), "splitting the bytes changed the error");
  FUZZ_CHECK(okWhole == whole.error().empty(), "a refusal without a reason, or a reason without a refusal");
  FUZZ_CHECK(a.size() == b.size(), "splitting the bytes changed the number of events");
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    FUZZ_CHECK(a[i].data == b[i].data && a[i].type == b[i].type && a[i].id == b[i].id,
               "splitting the bytes changed an event");
    FUZZ_CHECK(a[i].data.size() <= maxData, "an event's data is over its cap");
    FUZZ_CHECK((a[i].type == "message" || a[i].type.size() <= maxLine) && a[i].id.size() <= maxLine,
               "a field is longer than a line may be");
  }
  return 0;
}
