// Internals shared by the redactor's translation units. Not a public API.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "supervisor/redact/redactor.h"

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

// Patterned secrets (everything that is not a known value). Appends spans in any order.
void findPatterns(std::string_view text, std::vector<Span>& out);

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
