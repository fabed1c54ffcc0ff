// What a web page or a search service sends pine-web (web/html_text.h, web/search.h) over any
// bytes: htmlToText with a base drawn from the input, and searchResultsText over the same bytes.
//   1. neither crashes, throws nor overflows its stack (deep nesting: ASan);
//   2. the text is valid UTF-8 (gumbo decodes; links and the title come from its tree), with no
//      whitespace at either end.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_check.h"
#include "web/html_text.h"
#include "web/search.h"

namespace {

bool htmlFuzzUtf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    auto b = static_cast<unsigned char>(s[i]);
    std::size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size() || (n == 2 && b < 0xC2)) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

bool htmlFuzzSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const char* bases[] = {"https://example.org/dir/page.html", "", "http://[::1]:8080/a?b#c"};
  const std::string base = bases[size % 3];
  std::string text = pine::web::htmlToText(input, base);
  FUZZ_CHECK(htmlFuzzUtf8(text), "htmlToText gave invalid UTF-8");
  FUZZ_CHECK(text.empty() || !htmlFuzzSpace(text.front()), "leading whitespace");
  FUZZ_CHECK(text.empty() || !htmlFuzzSpace(text.back()), "trailing whitespace");
  pine::web::searchResultsText(std::string(input));  // any answer: a result, never a throw
  return 0;
}
