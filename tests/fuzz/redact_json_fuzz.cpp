// JSON- and event-stream-aware redaction (FormatStreamRedactor) over any bytes, read as
// kJson or kEventStream, with known values taken from the text and from its decoded JSON
// strings, a split schedule and (for half the inputs) shrunk limits, all derived from a
// hash of the input:
//   1. nothing crashes (ASan, UBSan);
//   2. the stream over the split gives exactly the whole text's output (at shrunk limits,
//      the whole text fed at once under them);
//   3. kJson: the output is valid JSON whenever the input is, and so is every line when
//      every line was (JSON lines); kEventStream: the same events with the same fields,
//      and every event whose data was JSON still has JSON data;
//   4. at the real limits, no known value is left in a decoded string of the output, nor
//      in its raw bytes when the value holds no byte that JSON or SSE framing is made of
//      (such a value lies inside one string, number or plain-text run: each is redacted).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "redact/detail.h"
#include "redact/redactor.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using pine::redact::Format;
using pine::redact::FormatStreamRedactor;
using pine::redact::Redactor;
using pine::redact::detail::FormatTesting;

std::string fedInPieces(FormatStreamRedactor& s, std::string_view text, pine::fuzz::Rng& rng) {
  static constexpr std::size_t kMax[] = {1, 2, 3, 7, 16, 64, 1000, 1 << 20};
  const std::size_t maxChunk = kMax[rng.below(std::size(kMax))];
  std::string out;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t len = std::min(text.size() - pos, 1 + rng.below(maxChunk));
    out += s.feed(text.substr(pos, len));
    pos += len;
  }
  return out + s.finish();
}

void collect(const nlohmann::json& j, std::vector<std::string>& out) {
  if (j.is_string()) {
    out.push_back(j.get<std::string>());
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      out.push_back(k);
      collect(v, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) collect(v, out);
  }
}

struct Event {
  std::vector<std::string> names;
  std::string data;
  bool hasData = false;
};

// Events as a client reads them; line ends \r\n, \n or \r; a BOM at the start skipped.
std::vector<Event> eventsOf(std::string_view s) {
  std::vector<Event> events;
  Event cur;
  bool any = false;
  std::size_t pos = s.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  while (pos < s.size()) {
    const std::size_t e = s.find_first_of("\r\n", pos);
    const std::string_view line = s.substr(pos, e == std::string_view::npos ? std::string_view::npos : e - pos);
    pos = e == std::string_view::npos ? s.size() : e + (s[e] == '\r' && e + 1 < s.size() && s[e + 1] == '\n' ? 2 : 1);
    if (line.empty()) {
      if (any) events.push_back(cur);
      cur = Event{};
      any = false;
      continue;
    }
    if (line[0] == ':') continue;
    const std::size_t colon = line.find(':');
    const std::string_view name = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    if (value.starts_with(' ')) value.remove_prefix(1);
    any = true;
    if (name == "data") {
      if (cur.hasData) cur.data += '\n';
      cur.data += value;
      cur.hasData = true;
    }
    // Other lines are ignored by clients, and may be redacted: plain text.
    if (name == "data" || name == "event" || name == "id" || name == "retry") cur.names.emplace_back(name);
  }
  if (any) events.push_back(cur);
  return events;
}

std::vector<std::string_view> linesOf(std::string_view s) {
  std::vector<std::string_view> lines;
  for (std::size_t pos = 0;;) {
    const std::size_t e = s.find('\n', pos);
    lines.push_back(s.substr(pos, e == std::string_view::npos ? std::string_view::npos : e - pos));
    if (e == std::string_view::npos) return lines;
    pos = e + 1;
  }
}

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// A value the markers cannot spell (brackets, "redacted") and that is not only whitespace.
bool checkable(std::string_view v) {
  return v.size() >= pine::redact::kMinKnownLength && v.find_first_of("[]") == std::string_view::npos &&
         pine::redact::kMarker.find(v) == std::string_view::npos && !blank(v);
}

// ... and that can only sit inside one string, number or run of plain text.
bool withinOneToken(std::string_view v) { return v.find_first_of("\"\\{}[],: \t\r\n") == std::string_view::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  pine::fuzz::Rng rng{pine::fuzz::hashOf(text)};
  const Format format = rng.next() & 1 ? Format::kJson : Format::kEventStream;

  // What the input holds as JSON: the whole text, its lines, or its events' data.
  std::vector<std::string> decoded;
  const bool wholeJson = format == Format::kJson && nlohmann::json::accept(text);
  bool everyLine = format == Format::kJson && !blank(text);
  if (format == Format::kJson) {
    for (std::string_view line : linesOf(text)) {
      if (blank(line)) continue;
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded()) {
        everyLine = false;
      } else {
        collect(j, decoded);
      }
    }
    if (wholeJson) collect(nlohmann::json::parse(text), decoded);
  }
  const std::vector<Event> before = format == Format::kEventStream ? eventsOf(text) : std::vector<Event>{};
  for (const Event& e : before) {
    const auto j = nlohmann::json::parse(e.data, nullptr, false);
    if (!j.is_discarded()) collect(j, decoded);
  }

  // Known values: pieces of decoded strings (so that they occur behind escapes) and of the raw text.
  std::vector<std::string> known;
  for (std::size_t k = rng.below(4); k > 0 && !decoded.empty(); --k) {
    const std::string& s = decoded[rng.below(decoded.size())];
    if (s.size() < pine::redact::kMinKnownLength) continue;
    const std::size_t at = rng.below(s.size() - pine::redact::kMinKnownLength + 1);
    known.push_back(s.substr(at, pine::redact::kMinKnownLength + rng.below(40)));
  }
  for (std::size_t k = rng.below(3); k > 0 && size > 0; --k) {
    const std::size_t at = rng.below(size);
    known.emplace_back(text.substr(at, 8 + rng.below(40)));
  }
  const Redactor redactor(known);

  std::string whole;
  const bool shrunk = rng.next() & 1;
  if (shrunk) {
    const std::size_t maxHold = 32 + rng.below(1024);
    const std::size_t tail = maxHold / (2 + rng.below(8));
    const std::size_t context = maxHold / (2 + rng.below(16));
    const std::size_t hold = 1 + rng.below(200);
    whole = FormatTesting::whole(redactor, format, text, maxHold, tail, context, hold);
    FormatStreamRedactor stream = FormatTesting::make(redactor, format, maxHold, tail, context, hold);
    FUZZ_CHECK(fedInPieces(stream, text, rng) == whole, "stream with small limits differs from the whole text");
  } else {
    whole = redactor.redact(text, format);
    FormatStreamRedactor stream(redactor, format);
    FUZZ_CHECK(fedInPieces(stream, text, rng) == whole, "stream differs from the whole text");
    FUZZ_CHECK(fedInPieces(stream, text, rng) == whole, "a reused stream differs");
  }

  std::vector<std::string> after;
  if (format == Format::kJson) {
    if (wholeJson) {
      const auto j = nlohmann::json::parse(whole, nullptr, false);
      FUZZ_CHECK(!j.is_discarded(), "valid JSON became invalid");
      collect(j, after);
    }
    const auto in = linesOf(text), out = linesOf(whole);
    FUZZ_CHECK(in.size() == out.size(), "the number of lines changed");
    if (everyLine) {
      for (std::string_view line : out) {
        if (blank(line)) continue;
        const auto j = nlohmann::json::parse(line, nullptr, false);
        FUZZ_CHECK(!j.is_discarded(), "a valid JSON line became invalid");
        collect(j, after);
      }
    }
  } else {
    const std::vector<Event> out = eventsOf(whole);
    FUZZ_CHECK(out.size() == before.size(), "the number of events changed");
    for (std::size_t i = 0; i < out.size(); ++i) {
      FUZZ_CHECK(out[i].names == before[i].names, "an event's fields changed");
      if (!nlohmann::json::accept(before[i].data)) continue;
      const auto j = nlohmann::json::parse(out[i].data, nullptr, false);
      FUZZ_CHECK(!j.is_discarded(), "an event's JSON data became invalid");
      collect(j, after);
    }
  }

  // With limits of a few dozen bytes a known value can be longer than what the plain scan
  // keeps in view at its cap: the values are checked at the real limits (as in redact_fuzz).
  for (const std::string& v : known) {
    if (shrunk || !checkable(v)) continue;
    for (const std::string& s : after) FUZZ_CHECK(s.find(v) == std::string::npos, "a known value is left in a string");
    if (withinOneToken(v)) FUZZ_CHECK(whole.find(v) == std::string::npos, "a known value is left in the output");
  }
  return 0;
}
