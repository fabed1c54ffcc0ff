// Redaction over any bytes, with known values taken from the text itself (so they do
// occur, across lines too) and a split schedule, all derived from a hash of the input:
//   1. redact() does not crash (ASan, UBSan);
//   2. StreamRedactor over the split, and redactStream() over an istream, give exactly
//      redact() of the whole;
//   3. no known value of kMinKnownLength bytes or more is left in the output (except
//      values the markers themselves can spell: "redacted", or any with a bracket).
// Half the inputs shrink the stream's limits to a few hundred bytes, so its cap is
// reached and the cut rule is held to the same equality with the whole text fed at once.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "redact/detail.h"
#include "redact/redactor.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using pine::redact::Redactor;
using pine::redact::StreamRedactor;

// Chunk lengths for the split: mostly small (every boundary matters), sometimes large.
std::vector<std::size_t> schedule(pine::fuzz::Rng& rng, std::size_t size) {
  static constexpr std::size_t kMax[] = {1, 2, 3, 5, 8, 16, 40, 100, 1000, 1 << 20};
  const std::size_t maxChunk = kMax[rng.below(std::size(kMax))];
  std::vector<std::size_t> lens;
  for (std::size_t pos = 0; pos < size;) {
    const std::size_t len = std::min(size - pos, 1 + rng.below(maxChunk));
    lens.push_back(len);
    pos += len;
  }
  return lens;
}

std::string streamed(StreamRedactor& s, std::string_view text, const std::vector<std::size_t>& lens) {
  std::string out;
  std::size_t pos = 0;
  for (std::size_t len : lens) {
    out += s.feed(text.substr(pos, len));
    pos += len;
  }
  return out + s.finish();
}

// A value the markers cannot spell: one with a bracket could be completed by a marker
// beside it, and "redacted" is inside every marker.
bool checkable(std::string_view v) {
  return v.size() >= pine::redact::kMinKnownLength && v.find_first_of("[]") == std::string_view::npos &&
         pine::redact::kMarker.find(v) == std::string_view::npos &&
         v.find_first_not_of(" \t\r\n") != std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  pine::fuzz::Rng rng{pine::fuzz::hashOf(text)};
  std::vector<std::string> known;
  for (std::size_t k = rng.below(4); k > 0 && size > 0; --k) {
    const std::size_t at = rng.below(size);  // one statement each: argument order is unspecified
    known.emplace_back(text.substr(at, 8 + rng.below(48)));
  }
  const Redactor redactor(known);
  const std::vector<std::size_t> lens = schedule(rng, size);

  if (rng.next() & 1) {
    const std::size_t maxHold = 32 + rng.below(1024);
    const std::size_t tail = maxHold / (2 + rng.below(8));
    const std::size_t context = maxHold / (2 + rng.below(16));
    using pine::redact::detail::StreamTesting;
    const std::string whole = StreamTesting::whole(redactor, text, maxHold, tail, context);
    StreamRedactor stream = StreamTesting::make(redactor, maxHold, tail, context);
    FUZZ_CHECK(streamed(stream, text, lens) == whole, "stream with small limits differs from the whole text");
    return 0;
  }

  const std::string whole = redactor.redact(text);
  StreamRedactor stream(redactor);
  FUZZ_CHECK(streamed(stream, text, lens) == whole, "stream differs from redact() of the whole text");
  FUZZ_CHECK(streamed(stream, text, schedule(rng, size)) == whole, "a reused stream differs");
  std::istringstream in{std::string(text)};
  std::ostringstream out;
  redactor.redactStream(in, out);
  FUZZ_CHECK(out.str() == whole, "redactStream() differs from redact()");
  for (const std::string& v : known) {
    if (checkable(v)) FUZZ_CHECK(whole.find(v) == std::string::npos, "a known value is left in the output");
  }
  return 0;
}
