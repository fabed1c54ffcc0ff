// Known values: every value is matched in the forms it is likely to appear in
// (as is, JSON-escaped, URL-encoded, base64 at each alignment). The search samples
// one 4-byte gram every 5 bytes: a form is at least 8 bytes long, so any occurrence
// covers a sampled gram at an offset 0..4 of its first 8 bytes. A bit filter over
// those grams rejects almost every sample, so the cost does not grow with the
// number of values.
#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "redact/detail.h"

namespace pine::redact {
namespace {

constexpr unsigned kFilterBits = 18;  // 32 KiB per filter: stays in L1/L2
constexpr std::size_t kStride = 5;    // kMinKnownLength - 4 + 1

inline std::uint32_t load32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline std::uint64_t load64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline std::uint32_t hashGram(std::uint32_t g) { return (g * 0x9E3779B1u) >> (32 - kFilterBits); }
inline std::uint32_t hashHead(std::uint64_t h) {
  return static_cast<std::uint32_t>((h * 0x9E3779B97F4A7C15ull) >> (64 - kFilterBits));
}
inline void setBit(std::vector<std::uint64_t>& bits, std::uint32_t h) { bits[h >> 6] |= 1ull << (h & 63); }
inline bool testBit(const std::vector<std::uint64_t>& bits, std::uint32_t h) {
  return (bits[h >> 6] >> (h & 63)) & 1;
}

std::string jsonEscape(std::string_view v, bool escapeSlash) {
  static constexpr char kHexDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : v) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '/':
        out += escapeSlash ? "\\/" : "/";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHexDigits[c >> 4];
          out += kHexDigits[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::string percentEncode(std::string_view v, bool upper, bool plusForSpace) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  std::string out;
  for (unsigned char c : v) {
    if (detail::is(static_cast<char>(c), detail::kAlnum) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else if (c == ' ' && plusForSpace) {
      out += '+';
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

// The base64 characters that depend only on the value when it starts `align` bytes
// into an encoded blob (e.g. the password inside a Basic credential "user:password").
std::string base64Core(std::string_view v, std::size_t align, bool urlSafe) {
  const char* abc = urlSafe ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                            : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(align, '\0');
  bytes.append(v);
  std::string enc;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
    for (int k = 0; k < 4; ++k) enc += abc[(n >> (18 - 6 * k)) & 63];
  }
  const std::size_t firstBit = 8 * align, endBit = 8 * (align + v.size());
  const std::size_t first = (firstBit + 5) / 6, last = endBit / 6;  // sextets [first, last)
  if (last <= first) return {};
  return enc.substr(first, last - first);
}

std::string base64Full(std::string_view v, bool urlSafe) {
  std::string core = base64Core(v, 0, urlSafe);
  if (v.size() % 3 == 0) return core;
  // Standalone encoding: one more character from the last partial group, then padding.
  const char* abc = urlSafe ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                            : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::size_t rem = v.size() % 3, base = v.size() - rem;
  std::uint32_t n = static_cast<unsigned char>(v[base]) << 16;
  if (rem == 2) n |= static_cast<unsigned char>(v[base + 1]) << 8;
  std::string out = core;
  out += abc[(n >> (rem == 1 ? 12 : 6)) & 63];
  out.append(rem == 1 ? "==" : "=");
  return out;
}

}  // namespace

Redactor::Redactor(std::vector<std::string> knownSecrets) {
  auto impl = std::make_shared<Impl>();
  std::unordered_set<std::string> seenValues, seenForms;
  auto addForm = [&](std::string f) {
    if (f.size() < kMinKnownLength || !seenForms.insert(f).second) return;
    impl->forms.push_back(std::move(f));
  };
  for (std::size_t i = 0; i < knownSecrets.size(); ++i) {
    const std::string& v = knownSecrets[i];
    if (v.size() < kMinKnownLength) {
      impl->skipped.push_back({i, "shorter than " + std::to_string(kMinKnownLength) +
                                      " characters: redacted only where a pattern matches it"});
      continue;
    }
    if (v.find_first_not_of(" \t\r\n") == std::string::npos) {
      impl->skipped.push_back({i, "only whitespace"});
      continue;
    }
    if (!seenValues.insert(v).second) continue;  // duplicates are harmless; nothing to report
    ++impl->values;
    addForm(v);
    addForm(jsonEscape(v, false));
    addForm(jsonEscape(v, true));
    addForm(percentEncode(v, true, false));
    addForm(percentEncode(v, false, false));
    addForm(percentEncode(v, true, true));
    for (bool urlSafe : {false, true}) {
      addForm(base64Full(v, urlSafe));
      for (std::size_t align = 0; align < 3; ++align) addForm(base64Core(v, align, urlSafe));
    }
  }
  impl->gramBits.assign((1u << kFilterBits) / 64, 0);
  impl->headBits.assign((1u << kFilterBits) / 64, 0);
  for (std::uint32_t idx = 0; idx < impl->forms.size(); ++idx) {
    const std::string& f = impl->forms[idx];
    for (std::size_t o = 0; o < kStride; ++o) setBit(impl->gramBits, hashGram(load32(f.data() + o)));
    std::uint64_t head = load64(f.data());
    setBit(impl->headBits, hashHead(head));
    impl->byHead[head].push_back(idx);
    if (f.find('\n') != std::string::npos) impl->multiline.push_back(idx);
    impl->longestForm = std::max(impl->longestForm, f.size());
  }
  for (auto& [head, list] : impl->byHead) {
    std::sort(list.begin(), list.end(), [&](std::uint32_t a, std::uint32_t b) {
      return impl->forms[a].size() > impl->forms[b].size();
    });
  }
  impl_ = std::move(impl);
}

Redactor::Redactor(const Redactor&) = default;
Redactor& Redactor::operator=(const Redactor&) = default;
Redactor::Redactor(Redactor&&) noexcept = default;
Redactor& Redactor::operator=(Redactor&&) noexcept = default;
Redactor::~Redactor() = default;

void Redactor::Impl::findKnown(std::string_view text, std::vector<Span>& out) const {
  const std::size_t n = text.size();
  if (forms.empty() || n < kMinKnownLength) return;
  const char* s = text.data();
  for (std::size_t p = 0; p + 4 <= n; p += kStride) {
    if (!testBit(gramBits, hashGram(load32(s + p)))) continue;
    // The sampled gram may sit at offset 0..4 of an occurrence.
    for (std::size_t o = 0; o < kStride && o <= p; ++o) {
      const std::size_t start = p - o;
      if (start + kMinKnownLength > n) continue;
      const std::uint64_t head = load64(s + start);
      if (!testBit(headBits, hashHead(head))) continue;
      auto it = byHead.find(head);
      if (it == byHead.end()) continue;
      for (std::uint32_t idx : it->second) {
        const std::string& f = forms[idx];
        if (f.size() <= n - start && std::memcmp(s + start, f.data(), f.size()) == 0) {
          out.push_back({start, start + f.size()});
          break;  // longest first
        }
      }
    }
  }
}

std::vector<Span> Redactor::Impl::findAll(std::string_view text) const {
  std::vector<Span> spans;
  findKnown(text, spans);
  detail::findPatterns(text, 0, 0, true, spans);
  if (spans.size() < 2) return spans;
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
  });
  std::vector<Span> merged;
  merged.reserve(spans.size());
  for (const Span& sp : spans) {
    if (!merged.empty() && sp.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, sp.end);
    } else {
      merged.push_back(sp);
    }
  }
  return merged;
}

void Redactor::Impl::apply(std::string_view text, const std::vector<Span>& spans, std::size_t from, std::size_t to,
                           std::string& out) {
  out.clear();
  out.reserve(to - from + spans.size() * kMarker.size());
  std::size_t pos = from;
  for (const Span& sp : spans) {
    if (sp.end <= from || sp.begin >= to) continue;
    const std::size_t b = std::max(sp.begin, from);
    if (b > pos) out.append(text.substr(pos, b - pos));
    out.append(kMarker);
    pos = std::min(sp.end, to);
  }
  if (pos < to) out.append(text.substr(pos, to - pos));
}

std::string Redactor::redact(std::string_view text) const {
  std::string out;
  redactInto(text, out);
  return out;
}

// A text of kMaxHold bytes or more may hold no line end a stream could release at for
// that long; it is redacted the way the stream cuts it, so the two agree on it too.
void Redactor::redactInto(std::string_view text, std::string& out) const {
  if (text.size() < StreamRedactor::kMaxHold) {
    Impl::apply(text, impl_->findAll(text), 0, text.size(), out);
    return;
  }
  out.clear();
  out.reserve(text.size());
  StreamRedactor stream(*this);
  stream.feedInto(text, out);
  stream.finishInto(out);
}

std::vector<Span> Redactor::find(std::string_view text) const {
  if (text.size() < StreamRedactor::kMaxHold) return impl_->findAll(text);
  std::vector<Span> spans;
  std::string sink;
  StreamRedactor stream(*this);
  stream.collect_ = &spans;
  stream.feedInto(text, sink);
  stream.finishInto(sink);
  return spans;
}

const std::vector<Redactor::Skipped>& Redactor::skipped() const { return impl_->skipped; }

std::size_t Redactor::knownCount() const { return impl_->values; }

}  // namespace pine::redact
