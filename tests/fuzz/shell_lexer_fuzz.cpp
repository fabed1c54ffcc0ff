// The bash guard's lexer: any text is a Script or a ParseError, nothing else
// (no other exception, no crash), in both of its reading modes.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>

#include "sandbox/guard/shell_lexer.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

template <typename F>
void onlyParseErrors(F&& parse) {
  try {
    parse();
  } catch (const pine::guard::ParseError&) {
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, e.what());
  } catch (...) {
    FUZZ_CHECK(false, "the lexer threw something other than ParseError");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  onlyParseErrors([&] { (void)pine::guard::parseScript(text); });
  onlyParseErrors([&] { (void)pine::guard::parseExpandableText(text, false); });
  onlyParseErrors([&] { (void)pine::guard::parseExpandableText(text, true); });
  return 0;
}
