// Internals shared by the redactor's translation units. Not a public API.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "redact/redactor.h"

namespace pine::redact::detail {

// Byte classes as bits, so a matcher's character set is one mask test.
enum : std::uint16_t {
  kDigit = 1 << 0,
  kUpper = 1 << 1,
  kLower = 1 << 2,
  kUnder = 1 << 3,   // _
  kDash = 1 << 4,    // -
  kDot = 1 << 5,     // .
  kPlus = 1 << 6,    // +
  kSlash = 1 << 7,   // /
  kEq = 1 << 8,      // =
  kHexLo = 1 << 9,   // a-f
  kHexUp = 1 << 10,  // A-F
  kSpace = 1 << 11,  // space, tab
  kEol = 1 << 12,    // \n, \r
  kTilde = 1 << 13,  // ~
};
inline constexpr std::uint16_t kAlnum = kDigit | kUpper | kLower;
inline constexpr std::uint16_t kTok = kAlnum | kUnder | kDash;          // base64url and most token bodies
inline constexpr std::uint16_t kB64 = kAlnum | kPlus | kSlash | kEq;    // standard base64
inline constexpr std::uint16_t kHex = kDigit | kHexLo | kHexUp;
inline constexpr std::uint16_t kHexLower = kDigit | kHexLo;

inline constexpr std::array<std::uint16_t, 256> kClass = [] {
  std::array<std::uint16_t, 256> c{};
  for (int i = '0'; i <= '9'; ++i) c[i] = kDigit;
  for (int i = 'A'; i <= 'Z'; ++i) c[i] = kUpper | (i <= 'F' ? kHexUp : 0);
  for (int i = 'a'; i <= 'z'; ++i) c[i] = kLower | (i <= 'f' ? kHexLo : 0);
  c['_'] = kUnder;
  c['-'] = kDash;
  c['.'] = kDot;
  c['+'] = kPlus;
  c['/'] = kSlash;
  c['='] = kEq;
  c[' '] = c['\t'] = kSpace;
  c['\n'] = c['\r'] = kEol;
  c['~'] = kTilde;
  return c;
}();

inline bool is(char ch, std::uint16_t mask) { return (kClass[static_cast<unsigned char>(ch)] & mask) != 0; }

// A private key block's END is looked for within this many bytes of its body, and a
// block without one runs for at most this long.
inline constexpr std::size_t kPemWindow = 64 << 10;
// A quoted value carried past the end of its line (a backslash before the newline, or
// an open shell quote after --password) runs for at most this many more bytes.
inline constexpr std::size_t kMaxContinuation = 4 << 10;

struct ScanStop {
  std::size_t resume;  // the next position to look at
  bool open;           // a match starts at `resume` that needs text past the view
};

// Patterned secrets (everything that is not a known value), scanning from `from`.
// A matcher reads its own line from its start, or from `floor` (which acts as a line
// start) when the line began before it; nothing before `floor` is read. Appends spans
// in any order, and with `consumed` the ranges the matches skipped. When `atEnd` is
// false the view must end just after a '\n', and the scan stops at the first match
// that needs bytes past the view: everything appended before it is what a scan of any
// longer text (with the same floor) appends too.
ScanStop findPatterns(std::string_view text, std::size_t floor, std::size_t from, bool atEnd,
                      std::vector<Span>& out, std::vector<Span>* consumed = nullptr);

// Values that name or stand in for a secret rather than being one: ${secret:NAME},
// <token>, $VAR, xxxx, ****, null, YOUR_API_KEY ... They stay as they are.
bool isPlaceholder(std::string_view value);

}  // namespace pine::redact::detail

namespace pine::redact {

struct Redactor::Impl {
  std::vector<std::string> forms;          // every string matched as a known value
  std::vector<std::uint64_t> gramBits;     // filter over 4-byte grams of each form's first 8 bytes
  std::vector<std::uint64_t> headBits;     // filter over each form's first 8 bytes
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> byHead;  // longest form first
  std::vector<std::uint32_t> multiline;    // forms containing '\n' (the stream must hold those back)
  std::size_t longestForm = 0;
  std::vector<Skipped> skipped;
  std::size_t values = 0;

  void findKnown(std::string_view text, std::vector<Span>& out) const;
  // All spans, sorted and merged (touching spans become one marker).
  std::vector<Span> findAll(std::string_view text) const;
  static void apply(std::string_view text, const std::vector<Span>& spans, std::size_t from, std::size_t to,
                    std::string& out);
  static std::string apply(std::string_view text, const std::vector<Span>& spans, std::size_t from, std::size_t to) {
    std::string out;
    apply(text, spans, from, to, out);
    return out;
  }
};

}  // namespace pine::redact

namespace pine::redact::detail {

// The tests reach the stream's cap with small inputs by shrinking its limits (the
// rule needs maxHold >= 2 * tail and maxHold >= 2 * context).
struct StreamTesting {
  static StreamRedactor make(const Redactor& redactor, std::size_t maxHold, std::size_t tail, std::size_t context);
  // What redact() gives under those limits: the whole text fed at once.
  static std::string whole(const Redactor& redactor, std::string_view text, std::size_t maxHold, std::size_t tail,
                           std::size_t context);
  // Bytes the stream holds (look-behind included).
  static std::size_t held(const StreamRedactor& stream);
};

// The spans a StreamRedactor decides, without its output text: for FormatStreamRedactor,
// which applies them itself. spans() holds the final spans, merged, in input offsets, up
// to final() (the last one may still grow past it); after finish() every span is final.
class SpanStream {
 public:
  SpanStream(const Redactor& redactor, std::size_t maxHold, std::size_t tail, std::size_t context);
  SpanStream(const SpanStream&) = delete;  // the stream writes into spans_
  SpanStream& operator=(const SpanStream&) = delete;
  void feed(std::string_view chunk);
  void finish();
  std::size_t final() const;
  std::vector<Span>& spans() { return spans_; }

 private:
  StreamRedactor stream_;
  std::vector<Span> spans_;
  std::string sink_;
  bool done_ = false;
};

// The tests shrink a FormatStreamRedactor's limits too (its plain scans use StreamTesting's).
struct FormatTesting {
  static FormatStreamRedactor make(const Redactor& redactor, Format format, std::size_t maxHold, std::size_t tail,
                                   std::size_t context, std::size_t stringHold);
  // The whole text fed at once under those limits.
  static std::string whole(const Redactor& redactor, Format format, std::string_view text, std::size_t maxHold,
                           std::size_t tail, std::size_t context, std::size_t stringHold);
  // Bytes the redactor holds (its own copy, not its plain scans').
  static std::size_t held(const FormatStreamRedactor& stream);
};

}  // namespace pine::redact::detail
