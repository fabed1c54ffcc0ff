// Any bytes as a JSON-text column's value (broker/store/json_text.h): the store's own check says
// yes exactly where nlohmann::json::accept does, except for text with a NUL byte, which nlohmann
// takes for the end of its input and the store refuses. A yes that nlohmann does not share would
// let the store hold text that its readers cannot parse; a no it does not share would refuse an
// event that was valid.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "broker/store/json_text.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const bool nlohmannSays = in.find('\0') == std::string::npos && nlohmann::json::accept(in);
  FUZZ_CHECK(pine::store::detail::isJson(in) == nlohmannSays, "the store's JSON check and nlohmann's disagree");
  // The same text inside an array, so that every value is also checked where a container goes on.
  const std::string wrapped = "[" + in + ",1]";
  const bool wrappedSays = wrapped.find('\0') == std::string::npos && nlohmann::json::accept(wrapped);
  FUZZ_CHECK(pine::store::detail::isJson(wrapped) == wrappedSays, "the two disagree inside an array");
  return 0;
}
