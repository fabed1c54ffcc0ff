// The Anthropic decoder: any bytes as an answer body (SSE, or a plain JSON body when it
// starts with '{'), split anywhere, give a Turn or a ProviderError and nothing else, the
// same whatever the split, with every count in 0..kMaxCount. The bytes are also decoded
// as the data of one event between message_start and message_stop (so JSON-shaped
// inputs reach the event path) and as a non-2xx body (errorFor). The properties are in
// tests/providers/stream_fuzz.h.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tests/providers/stream_fuzz.h"
#include "providers/anthropic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pine::model;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const AnthropicProvider provider;
  fuzz::checkBody(provider, input);
  const std::string event = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\ndata: " +
                            std::string(input) + "\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  fuzz::checkBody(provider, event);
  fuzz::checkErrorBody(provider, input);
  return 0;
}
