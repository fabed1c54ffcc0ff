// The bash guard: any text gets a verdict, never an exception or a crash; the
// same text gets the same verdict twice; a refusal says why and an allow says
// nothing; and a `true; ` in front changes no verdict (it changes no state the
// guard tracks, so hiding a command behind it must not work, nor must it turn
// an allowed command into a refused one).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sandbox/guard/bash_guard.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

pine::guard::Verdict verdictOf(std::string_view text) {
  try {
    return pine::guard::checkBashCommand(text);
  } catch (...) {
    FUZZ_CHECK(false, "checkBashCommand threw");
  }
  return {};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto first = verdictOf(text);
  FUZZ_CHECK(first.allowed == first.reason.empty(), "a refusal without a reason, or an allow with one");
  const auto again = verdictOf(text);
  FUZZ_CHECK(again.allowed == first.allowed && again.reason == first.reason, "two verdicts for the same text");
  const auto prefixed = verdictOf("true; " + std::string(text));
  // The only difference allowed: the two steps `true; ` costs can tip a command
  // that was just inside the work budget over it (a refusal, never an allow).
  FUZZ_CHECK(prefixed.allowed == first.allowed || (first.allowed && prefixed.reason == "too complex to check"),
             "`true; ` in front changed the verdict");
  return 0;
}
