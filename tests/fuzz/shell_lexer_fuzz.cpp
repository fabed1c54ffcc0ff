// The bash guard's lexer: any text is a Script or a ParseError, nothing else.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sandbox/guard/shell_lexer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)pine::guard::parseScript(text);
  } catch (const pine::guard::ParseError&) {
  }
  try {
    (void)pine::guard::parseExpandableText(text, false);
  } catch (const pine::guard::ParseError&) {
  }
  return 0;
}
