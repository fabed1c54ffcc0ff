// Redaction that keeps JSON and server-sent events well-formed (FormatStreamRedactor in
// redactor.h). Three parts, each a function of the input bytes alone, so that no split
// can change the output:
//   - the lexer classifies every byte once (structure, plain text, content of a key or
//     a value string, number), marks where each string's escape sequences and UTF-8
//     characters start, and decodes the strings;
//   - the scans decide what is secret: the plain scan over all raw bytes (a SpanStream),
//     and one over each decoded string (whole up to kStringHold bytes, else streamed),
//     whose spans are widened to whole escapes/characters and marked on the raw bytes;
//   - the output walks the classified bytes only as far as every decision is final.
// Which Content-Type means which format is formatFor(), at the end.
#include <algorithm>
#include <cstring>
#include <deque>

#include "redact/detail.h"

namespace pine::redact {
// Named rather than anonymous: FormatStreamRedactor::Machine (external linkage) holds these
// types, and a unity build would otherwise warn that it uses an anonymous namespace.
namespace formatscan {

constexpr std::size_t kUnset = std::string_view::npos;
constexpr std::size_t kSlice = 64 << 10;  // input is taken this much at a time
constexpr std::uint64_t kTextToken = ~std::uint64_t{0};
constexpr std::uint64_t kFnvBasis = 0xCBF29CE484222325ull;
constexpr std::string_view kRedactedNumber = "\"[redacted]\"";

// What a byte is. Units (one escape sequence, or one UTF-8 character) are what a
// string's redaction replaces, never part of one.
enum : std::uint8_t {
  kStruct = 0,  // never replaced: JSON punctuation and whitespace, literals, SSE framing
  kText = 1,    // plain text: replaced where the plain scan says
  kKey = 2,     // content of an object key
  kValue = 3,   // content of any other string
  kNumber = 4,
  kKindMask = 7,
  kTokenStart = 1 << 3,  // first content byte of a string, or first byte of a number
  kUnitStart = 1 << 4,
  kDecoded = 1 << 5,  // the scan of the decoded string redacts this unit
  kStreamed = 1 << 6,  // on a string's first byte: too long to hold, scanned as a stream
};

inline bool isEol(char c) { return c == '\n' || c == '\r'; }
inline bool isJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct Unit {
  enum Kind : std::uint8_t { kNeedMore, kBad, kClose, kOk } kind = kNeedMore;
  std::uint8_t rawLen = 0;
  std::uint8_t decLen = 0;
  char decoded[4] = {};
};

void setUtf8(Unit& u, std::uint32_t cp) {
  auto put = [&](unsigned v) { u.decoded[u.decLen++] = static_cast<char>(v); };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xC0 | (cp >> 6));
    put(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    put(0xE0 | (cp >> 12));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  } else {
    put(0xF0 | (cp >> 18));
    put(0x80 | ((cp >> 12) & 0x3F));
    put(0x80 | ((cp >> 6) & 0x3F));
    put(0x80 | (cp & 0x3F));
  }
}

// Four hex digits at s[at..]: the value, -1 if one is not hex, -2 if s ends first.
int hex4(std::string_view s, std::size_t at) {
  int v = 0;
  for (std::size_t i = at; i < at + 4; ++i) {
    if (i >= s.size()) return -2;
    const int d = hexDigit(s[i]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// The unit of string content that starts s. `final`: no byte follows s (the end of the
// input, or of an SSE line). A lone surrogate escape decodes to U+FFFD and invalid UTF-8
// is taken a byte at a time: the input was not valid JSON, and its bytes stay as they are.
Unit scanUnit(std::string_view s, bool final) {
  Unit u;
  if (s.empty()) {
    u.kind = final ? Unit::kBad : Unit::kNeedMore;
    return u;
  }
  const unsigned char c = static_cast<unsigned char>(s[0]);
  if (c == '"') {
    u.kind = Unit::kClose;
    return u;
  }
  if (c < 0x20) {
    u.kind = Unit::kBad;
    return u;
  }
  if (c == '\\') {
    if (s.size() < 2) {
      u.kind = final ? Unit::kBad : Unit::kNeedMore;
      return u;
    }
    static constexpr std::string_view kFrom = "\"\\/bfnrt", kTo = "\"\\/\b\f\n\r\t";
    if (const std::size_t k = kFrom.find(s[1]); k != std::string_view::npos) {
      u.kind = Unit::kOk;
      u.rawLen = 2;
      u.decoded[u.decLen++] = kTo[k];
      return u;
    }
    if (s[1] != 'u') {
      u.kind = Unit::kBad;
      return u;
    }
    const int hi = hex4(s, 2);
    if (hi == -2) {
      // Too short to tell: more may come, unless a digit so far is not hex.
      bool ok = true;
      for (std::size_t i = 2; i < s.size(); ++i) ok = ok && hexDigit(s[i]) >= 0;
      u.kind = ok && !final ? Unit::kNeedMore : Unit::kBad;
      return u;
    }
    if (hi < 0) {
      u.kind = Unit::kBad;
      return u;
    }
    u.kind = Unit::kOk;
    u.rawLen = 6;
    if (hi < 0xD800 || hi > 0xDFFF) {
      setUtf8(u, static_cast<std::uint32_t>(hi));
      return u;
    }
    if (hi <= 0xDBFF) {
      // A pair is \uD8xx\uDCxx; anything else after the first half leaves it alone.
      bool consistent = true;
      for (std::size_t i = 6; i < 12 && i < s.size() && consistent; ++i) {
        const char b = s[i];
        switch (i) {
          case 6: consistent = b == '\\'; break;
          case 7: consistent = b == 'u'; break;
          case 8: consistent = b == 'd' || b == 'D'; break;
          case 9: consistent = (b >= 'c' && b <= 'f') || (b >= 'C' && b <= 'F'); break;
          default: consistent = hexDigit(b) >= 0;
        }
      }
      if (consistent && s.size() < 12 && !final) {
        u.kind = Unit::kNeedMore;
        return u;
      }
      if (consistent && s.size() >= 12) {
        const int lo = hex4(s, 8);
        u.rawLen = 12;
        setUtf8(u, 0x10000u + ((static_cast<std::uint32_t>(hi) - 0xD800u) << 10) +
                       (static_cast<std::uint32_t>(lo) - 0xDC00u));
        return u;
      }
    }
    setUtf8(u, 0xFFFD);
    return u;
  }
  u.kind = Unit::kOk;
  std::size_t n = 1;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
  }
  for (std::size_t i = 1; i < n; ++i) {
    if (i >= s.size()) {
      if (!final) {
        u.kind = Unit::kNeedMore;
        return u;
      }
      n = 1;
      break;
    }
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      n = 1;
      break;
    }
  }
  u.rawLen = static_cast<std::uint8_t>(n);
  u.decLen = static_cast<std::uint8_t>(n);
  std::memcpy(u.decoded, s.data(), n);
  return u;
}

// The number grammar of RFC 8259 as states; -1: the byte does not continue the number.
int numberNext(int state, char c) {
  const bool digit = c >= '0' && c <= '9';
  switch (state) {
    case 0: return c == '-' ? 1 : c == '0' ? 2 : digit ? 3 : -1;
    case 1: return c == '0' ? 2 : digit ? 3 : -1;
    case 2: return c == '.' ? 4 : (c == 'e' || c == 'E') ? 6 : -1;
    case 3: return digit ? 3 : c == '.' ? 4 : (c == 'e' || c == 'E') ? 6 : -1;
    case 4: return digit ? 5 : -1;
    case 5: return digit ? 5 : (c == 'e' || c == 'E') ? 6 : -1;
    case 6: return (c == '+' || c == '-') ? 7 : digit ? 8 : -1;
    case 7: return digit ? 8 : -1;
    case 8: return digit ? 8 : -1;
    default: return -1;
  }
}
inline bool numberComplete(int state) { return state == 2 || state == 3 || state == 5 || state == 8; }

// Unescaped quotes of a decoded text: where the JSON text it may itself be (a tool
// argument is JSON inside a JSON string) has its string delimiters.
std::vector<std::size_t> quotesOf(std::string_view d) {
  std::vector<std::size_t> quotes;
  std::size_t backslashes = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    if (d[i] == '\\') {
      ++backslashes;
      continue;
    }
    if (d[i] == '"' && backslashes % 2 == 0) quotes.push_back(i);
    backslashes = 0;
  }
  return quotes;
}

// A pattern's match stops at such a quote (a private key header without its END runs
// to the end of its line): the inner JSON keeps its delimiters. Known values are never
// cut short, wherever they are.
void clipAtQuotes(const std::vector<std::size_t>& quotes, std::vector<Span>& spans) {
  std::size_t k = 0;
  for (Span sp : spans) {
    auto q = std::lower_bound(quotes.begin(), quotes.end(), sp.begin);
    if (q != quotes.end() && *q == sp.begin) ++sp.begin, ++q;
    if (q != quotes.end()) sp.end = std::min(sp.end, *q);
    if (sp.end > sp.begin) spans[k++] = sp;
  }
  spans.resize(k);
}

// A run of a decoded text between quotes, decoded once more as string content (escapes
// that do not parse stay as they are): where each byte came from, for mapping back.
struct Decoded {
  std::string text;
  std::vector<Span> from;  // per byte of text: its unit in the source
};

Decoded decodeLoose(std::string_view s) {
  Decoded d;
  for (std::size_t i = 0; i < s.size();) {
    Unit u = scanUnit(s.substr(i), true);
    if (u.kind != Unit::kOk) {
      u.rawLen = u.decLen = 1;
      u.decoded[0] = s[i];
    }
    d.text.append(u.decoded, u.decLen);
    for (std::size_t k = 0; k < u.decLen; ++k) d.from.push_back({i, i + u.rawLen});
    i += u.rawLen;
  }
  return d;
}

void sortMergeSpans(std::vector<Span>& spans) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
  });
  std::size_t k = 0;
  for (const Span& sp : spans) {
    if (k > 0 && sp.begin <= spans[k - 1].end) {
      spans[k - 1].end = std::max(spans[k - 1].end, sp.end);
    } else {
      spans[k++] = sp;
    }
  }
  spans.resize(k);
}

// A string held whole is scanned this many levels of JSON-in-a-string deep.
constexpr int kNestedLevels = 2;

enum class Json : std::uint8_t { kValue, kValueOrClose, kKeyOrClose, kKey, kColon, kAfter, kString, kNumber, kLiteral, kError };
enum class Line : std::uint8_t { kStart, kName, kSpace, kData, kText };

// Where a string value sits: its depth and the key it is under (an array's strings are
// under the key of the array). The same field of a later event has the same place.
struct Place {
  std::size_t depth = 0;
  std::uint64_t key = 0;
  bool operator==(const Place&) const = default;
};

}  // namespace formatscan

using namespace formatscan;

struct FormatStreamRedactor::Machine {
  Machine(const Redactor& r, std::shared_ptr<const Redactor::Impl> i, Format f, Limits l)
      : redactor(r), impl(std::move(i)), format(f), limits(l) {
    reset();
  }

  Redactor redactor;
  std::shared_ptr<const Redactor::Impl> impl;
  Format format;
  Limits limits;
  std::unique_ptr<detail::SpanStream> raw;  // the plain scan over every byte
  bool rawDone = false;

  std::string text;               // input from base on, not yet out
  std::vector<std::uint8_t> cls;  // what each byte of text is
  std::size_t base = 0;
  std::size_t classified = 0;  // bytes before this are classified
  std::size_t lexPos = 0;      // the lexer reads on from here (past classified inside a number or literal)
  bool bomChecked = false;

  // JSON
  Json js = Json::kValue;
  std::vector<bool> objects;         // open containers, true for an object
  std::vector<std::uint64_t> keys;   // per depth: the key a string value there is under
  std::size_t tokenStart = 0;        // of the number or literal being read
  int numberState = 0;
  std::string_view literal;
  bool stringIsKey = false;
  bool contentSeen = false;
  std::size_t contentFirst = 0;  // the open string's first content byte
  std::uint64_t keyHash = kFnvBasis;
  std::deque<Place> places;  // of string values classified and not yet out

  // The decoded scan of the open string.
  bool stringOpen = false;
  std::string decoded;                      // held whole while shorter than stringHold
  std::unique_ptr<detail::SpanStream> dec;  // or streamed
  std::string decFeed;
  std::size_t cursorRaw = 0, cursorDec = 0;  // the units before are marked
  std::size_t decSpan = 0;

  // SSE
  Line line = Line::kStart;
  bool afterCR = false;
  bool dataField = false;

  // Output
  std::size_t outPos = 0;
  bool inMarker = false;  // the output ends with a marker that the next redacted byte joins
  std::size_t run = 0;    // index of the plain span looked at
  std::size_t runBegin = kUnset;
  std::uint64_t runFirst = 0;  // the token where the current plain span first reached content
  bool runHasFirst = false;
  bool runHome = false;  // ... and it was a string value at homePlace
  bool runClipped = false;  // it met a quote of the decoded string: none of the rest of that string
  Place homePlace;
  std::size_t backslashes = 0;  // decoded backslashes just before the unit going out
  bool tokenHeld = false;       // the string going out was held whole ...
  std::size_t tokenEnd = 0;     // ... and ends here
  std::size_t endFor = kUnset;  // tokenEnd is of the token that starts here
  std::uint64_t tokens = 0;
  Place current;

  char at(std::size_t p) const { return text[p - base]; }
  std::uint8_t& clsAt(std::size_t p) { return cls[p - base]; }
  std::size_t end() const { return base + text.size(); }
  std::string_view view(std::size_t from, std::size_t to) const {
    return std::string_view(text).substr(from - base, to - from);
  }

  void reset() {
    raw = std::make_unique<detail::SpanStream>(redactor, limits.maxHold, limits.tail, limits.context);
    rawDone = false;
    text.clear();
    cls.clear();
    base = classified = lexPos = outPos = 0;
    bomChecked = false;
    resetJson();
    places.clear();
    stringOpen = false;
    decoded.clear();
    dec.reset();
    decFeed.clear();
    line = Line::kStart;
    afterCR = dataField = false;
    inMarker = false;
    run = 0;
    runBegin = kUnset;
    runHasFirst = runHome = false;
  }

  void resetJson() {
    js = Json::kValue;
    objects.clear();
    keys.assign(1, 0);
  }

  // ------------------------------------------------------------ lexer

  void classify(std::size_t to, std::uint8_t kind) {
    for (std::size_t p = classified; p < to; ++p) clsAt(p) = kind;
    classified = to;
  }

  // From `at` on (read, not yet classified) the JSON is broken: plain text to the end of
  // its line (kJson) or of its event's data (kEventStream).
  bool error(std::size_t at) {
    classified = at;
    classify(lexPos, kText);
    js = Json::kError;
    return true;
  }

  bool push(std::size_t p, bool object) {
    if (objects.size() >= kMaxDepth) return error(p);
    objects.push_back(object);
    keys.push_back(object ? 0 : keys.back());
    classify(p + 1, kStruct);
    lexPos = p + 1;
    js = object ? Json::kKeyOrClose : Json::kValueOrClose;
    return true;
  }

  bool close(std::size_t p) {
    objects.pop_back();
    keys.pop_back();
    classify(p + 1, kStruct);
    lexPos = p + 1;
    js = Json::kAfter;
    return true;
  }

  bool startValue(std::size_t p) {
    const char c = at(p);
    switch (c) {
      case '{': return push(p, true);
      case '[': return push(p, false);
      case '"': startString(p, false); return true;
      case 't': literal = "true"; break;
      case 'f': literal = "false"; break;
      case 'n': literal = "null"; break;
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          js = Json::kNumber;
          tokenStart = lexPos = p;
          numberState = 0;
          return true;
        }
        lexPos = p;
        return error(p);
    }
    js = Json::kLiteral;
    tokenStart = lexPos = p;
    return true;
  }

  void startString(std::size_t p, bool key) {
    classify(p + 1, kStruct);
    lexPos = p + 1;
    js = Json::kString;
    stringIsKey = key;
    contentSeen = false;
    keyHash = kFnvBasis;
    stringOpen = true;
    decoded.clear();
    dec.reset();
    decFeed.clear();
    cursorRaw = p + 1;
    cursorDec = 0;
    decSpan = 0;
  }

  bool stringStep(std::size_t limit, bool hard) {
    const std::uint8_t kind = stringIsKey ? kKey : kValue;
    while (lexPos < limit) {
      const std::size_t p = lexPos;
      const Unit u = scanUnit(view(p, limit), hard);
      switch (u.kind) {
        case Unit::kNeedMore:
          return false;
        case Unit::kBad:
          endString();
          return error(p);
        case Unit::kClose:
          endString();
          classify(p + 1, kStruct);
          lexPos = p + 1;
          if (stringIsKey) {
            keys.back() = keyHash;
            js = Json::kColon;
          } else {
            js = Json::kAfter;
          }
          return true;
        case Unit::kOk:
          break;
      }
      std::uint8_t first = kind | kUnitStart;
      if (!contentSeen) {
        first |= kTokenStart;
        contentSeen = true;
        contentFirst = p;
        if (!stringIsKey) places.push_back({objects.size(), keys.back()});
      }
      clsAt(p) = first;
      for (std::size_t i = 1; i < u.rawLen; ++i) clsAt(p + i) = kind;
      classified = lexPos = p + u.rawLen;
      if (stringIsKey) {
        for (std::size_t i = 0; i < u.rawLen; ++i) keyHash = (keyHash ^ static_cast<unsigned char>(at(p + i))) * 0x100000001B3ull;
      }
      addDecoded(std::string_view(u.decoded, u.decLen));
    }
    if (!hard) return false;
    endString();  // no closing quote before the end of the line or input
    return error(lexPos);
  }

  bool numberStep(std::size_t limit, bool hard) {
    std::size_t p = lexPos;
    for (; p < limit; ++p) {
      const int next = numberNext(numberState, at(p));
      if (next < 0) break;
      numberState = next;
      if (p + 1 - tokenStart > kMaxNumber) {
        lexPos = p + 1;
        return error(tokenStart);
      }
    }
    lexPos = p;
    if (p == limit && !hard) return false;  // it may go on
    if (!numberComplete(numberState)) return error(tokenStart);
    clsAt(tokenStart) = kNumber | kTokenStart;
    classified = tokenStart + 1;
    classify(p, kNumber);
    js = Json::kAfter;
    return true;
  }

  bool literalStep(std::size_t limit, bool hard) {
    std::size_t p = lexPos;
    for (; p < limit && p - tokenStart < literal.size(); ++p) {
      if (at(p) != literal[p - tokenStart]) {
        lexPos = p;
        return error(tokenStart);
      }
    }
    lexPos = p;
    if (p - tokenStart == literal.size()) {
      classify(p, kStruct);
      js = Json::kAfter;
      return true;
    }
    if (!hard) return false;
    return error(tokenStart);
  }

  // One step of JSON at lexPos < limit; `hard`: nothing of this JSON text follows limit.
  // Returns false when it needs bytes past limit.
  bool jsonStep(std::size_t limit, bool hard) {
    switch (js) {
      case Json::kString: return stringStep(limit, hard);
      case Json::kNumber: return numberStep(limit, hard);
      case Json::kLiteral: return literalStep(limit, hard);
      case Json::kError: {
        std::size_t q = lexPos;
        while (q < limit && !isEol(at(q))) ++q;
        classify(q, kText);
        lexPos = q;
        if (q < limit) {  // kJson: the next line is read as JSON again
          classify(q + 1, kStruct);
          lexPos = q + 1;
          resetJson();
        }
        return true;
      }
      default:
        break;
    }
    const std::size_t p = lexPos;
    const char c = at(p);
    if (isJsonSpace(c)) {
      std::size_t q = p + 1;
      while (q < limit && isJsonSpace(at(q))) ++q;
      classify(q, kStruct);
      lexPos = q;
      return true;
    }
    lexPos = p;
    switch (js) {
      case Json::kValueOrClose:
        if (c == ']') return close(p);
        return startValue(p);
      case Json::kValue:
        return startValue(p);
      case Json::kKeyOrClose:
        if (c == '}') return close(p);
        [[fallthrough]];
      case Json::kKey:
        if (c == '"') {
          startString(p, true);
          return true;
        }
        return error(p);
      case Json::kColon:
        if (c != ':') return error(p);
        classify(p + 1, kStruct);
        lexPos = p + 1;
        js = Json::kValue;
        return true;
      case Json::kAfter:
        if (objects.empty()) return startValue(p);  // the next value of a sequence
        if (c == ',') {
          classify(p + 1, kStruct);
          lexPos = p + 1;
          js = objects.back() ? Json::kKey : Json::kValue;
          return true;
        }
        if (c == (objects.back() ? '}' : ']')) return close(p);
        return error(p);
      default:
        return error(p);
    }
  }

  // Ends a string, number or literal that reaches a hard limit at lexPos.
  void settle(std::size_t limit) {
    if (js == Json::kString || js == Json::kNumber || js == Json::kLiteral) jsonStep(limit, true);
  }

  // A UTF-8 byte order mark at the very start is framing (nlohmann and SSE skip it).
  bool checkBom(bool atEnd) {
    static constexpr std::string_view kBom = "\xEF\xBB\xBF";
    const std::string_view have = view(0, std::min<std::size_t>(end(), 3));
    if (have.size() < 3 && !atEnd && kBom.starts_with(have)) return false;
    bomChecked = true;
    if (have == kBom) {
      classify(3, kStruct);
      lexPos = 3;
    }
    return true;
  }

  static int fieldPrefix(std::string_view name) {
    for (std::string_view f : {"data", "event", "id", "retry"}) {
      if (f.starts_with(name)) return f == name ? 2 : 1;  // 2: a whole field name
    }
    return 0;
  }

  void lineEnd(std::size_t q) {
    classify(q + 1, kStruct);
    lexPos = q + 1;
    afterCR = at(q) == '\r';
    line = Line::kStart;
  }

  bool sseStep(bool atEnd) {
    const std::size_t p = lexPos;
    switch (line) {
      case Line::kStart: {
        const char c = at(p);
        if (afterCR) {
          afterCR = false;
          if (c == '\n') {  // the \n of a \r\n
            classify(p + 1, kStruct);
            lexPos = p + 1;
            return true;
          }
        }
        if (isEol(c)) {  // a blank line ends the event
          lineEnd(p);
          resetJson();
          return true;
        }
        line = Line::kName;
        return true;
      }
      case Line::kName: {
        // The field name is decided once its ':' or line end is in, or it can be no field.
        std::size_t q = p;
        while (q < end() && at(q) != ':' && !isEol(at(q))) {
          ++q;
          if (fieldPrefix(view(p, q)) == 0) {
            line = Line::kText;
            return true;
          }
        }
        if (q == end() && !atEnd) return false;
        const int field = fieldPrefix(view(p, q));
        if (q < end() && at(q) == ':') {
          if (q == p) {  // a comment
            classify(q + 1, kStruct);
            lexPos = q + 1;
            line = Line::kText;
            return true;
          }
          if (field != 2) {
            line = Line::kText;
            return true;
          }
          classify(q + 1, kStruct);
          lexPos = q + 1;
          dataField = view(p, q) == "data";
          line = Line::kSpace;
          return true;
        }
        if (field != 2) {  // a line that is no field: plain text
          line = Line::kText;
          return true;
        }
        classify(q, kStruct);  // a name alone is the field with an empty value
        lexPos = q;
        dataField = view(p, q) == "data";
        line = dataField ? Line::kData : Line::kText;
        return true;
      }
      case Line::kSpace:
        if (at(p) == ' ') {
          classify(p + 1, kStruct);
          lexPos = p + 1;
        }
        line = dataField ? Line::kData : Line::kText;
        return true;
      case Line::kText: {
        std::size_t q = p;
        while (q < end() && !isEol(at(q))) ++q;
        classify(q, kText);
        lexPos = q;
        if (q < end()) lineEnd(q);
        return true;
      }
      case Line::kData: {
        std::size_t q = p;
        while (q < end() && !isEol(at(q))) ++q;
        const bool hard = q < end() || atEnd;
        // The event's data lines are joined with '\n', which is JSON whitespace: one JSON
        // text runs on over them, and over the other fields between them.
        while (lexPos < q) {
          if (js == Json::kError) {
            classify(q, kText);
            lexPos = q;
          } else if (!jsonStep(q, hard)) {
            return false;
          }
        }
        if (hard) settle(q);
        if (q < end()) lineEnd(q);
        return true;
      }
    }
    return true;
  }

  void lex(bool atEnd) {
    while (lexPos < end()) {
      if (!bomChecked && !checkBom(atEnd)) return;
      if (lexPos >= end()) break;
      const bool more = format == Format::kJson ? jsonStep(end(), atEnd) : sseStep(atEnd);
      if (!more) break;
    }
    if (atEnd && (format == Format::kJson || line == Line::kData)) settle(end());
  }

  // ------------------------------------------------------------ the decoded scan

  void addDecoded(std::string_view bytes) {
    if (dec) {
      decFeed.append(bytes);
      return;
    }
    decoded.append(bytes);
    if (decoded.size() < limits.stringHold) return;
    // Too long to hold: a stream of its own from here on.
    clsAt(contentFirst) |= kStreamed;
    // A quarter of the plain cap: what it holds can take six raw bytes a byte (\u0041).
    const std::size_t hold = std::max(limits.maxHold / 4, 2 * std::max(limits.tail, limits.context));
    dec = std::make_unique<detail::SpanStream>(redactor, hold, limits.tail, limits.context);
    decFeed.swap(decoded);
    decoded.clear();
  }

  // Marks the units of the open string whose decoded bytes end by `final` and meet a span.
  void mark(std::size_t final, const std::vector<Span>& spans) {
    while (cursorRaw < classified) {
      const std::uint8_t kind = clsAt(cursorRaw) & kKindMask;
      if (kind != kKey && kind != kValue) break;  // the content ended
      std::size_t e = cursorRaw + 1;
      while (e < classified && !(clsAt(e) & kUnitStart) && (clsAt(e) & kKindMask) == kind) ++e;
      const std::size_t len = scanUnit(view(cursorRaw, e), true).decLen;
      if (cursorDec + len > final) break;
      while (decSpan + 1 < spans.size() && spans[decSpan].end <= cursorDec) ++decSpan;
      if (decSpan < spans.size() && spans[decSpan].begin < cursorDec + len && spans[decSpan].end > cursorDec) {
        for (std::size_t q = cursorRaw; q < e; ++q) clsAt(q) |= kDecoded;
      }
      cursorRaw = e;
      cursorDec += len;
    }
  }

  void flushDecoded() {
    if (!stringOpen || !dec) return;
    if (!decFeed.empty()) {
      dec->feed(decFeed);
      decFeed.clear();
    }
    mark(dec->final(), dec->spans());
  }

  // The spans of a decoded string: known values and patterns in it, and in the decoded
  // contents of the strings inside it, `level` more levels down.
  void scanHeld(std::string_view d, int level, std::vector<Span>& out) const {
    impl->findKnown(d, out);
    std::vector<Span> patterns;
    detail::findPatterns(d, 0, 0, true, patterns);
    const std::vector<std::size_t> quotes = quotesOf(d);
    clipAtQuotes(quotes, patterns);
    out.insert(out.end(), patterns.begin(), patterns.end());
    if (level == 0 || (quotes.empty() && d.find('\\') == std::string_view::npos)) return;
    std::size_t from = 0;
    for (std::size_t i = 0; i <= quotes.size(); ++i) {
      const std::size_t to = i < quotes.size() ? quotes[i] : d.size();
      if (to > from) {
        const Decoded inner = decodeLoose(d.substr(from, to - from));
        std::vector<Span> found;
        scanHeld(inner.text, level - 1, found);
        for (const Span& sp : found) out.push_back({from + inner.from[sp.begin].begin, from + inner.from[sp.end - 1].end});
      }
      from = to + 1;
    }
  }

  void endString() {
    if (dec) {
      if (!decFeed.empty()) dec->feed(decFeed);
      decFeed.clear();
      dec->finish();
      mark(kUnset, dec->spans());
      dec.reset();
    } else if (!decoded.empty()) {
      std::vector<Span> spans;
      scanHeld(decoded, kNestedLevels, spans);
      sortMergeSpans(spans);
      mark(kUnset, spans);
    }
    decoded.clear();
    stringOpen = false;
  }

  // ------------------------------------------------------------ output

  // Whether a span of the plain scan covers byte q; notes when a new one starts.
  bool covered(std::size_t q) {
    std::vector<Span>& spans = raw->spans();
    while (run + 1 < spans.size() && spans[run].end <= q) ++run;
    if (run >= spans.size() || q < spans[run].begin || q >= spans[run].end) return false;
    if (spans[run].begin != runBegin) {
      runBegin = spans[run].begin;
      runHasFirst = runHome = runClipped = false;
    }
    return true;
  }

  // A plain span reaches content of this kind: does it replace it?
  bool reaches(std::uint8_t kind) {
    if (!runHasFirst) {
      runHasFirst = true;
      runFirst = kind == kText ? kTextToken : tokens;
      runHome = kind == kValue;
      homePlace = current;
    }
    switch (kind) {
      case kText: return true;
      case kValue: return runFirst == tokens || (runHome && homePlace == current);
      default: return runFirst == tokens;
    }
  }

  void marker(std::string& out) {
    if (!inMarker) out.append(kMarker);
    inMarker = true;
  }

  bool knownIn(std::size_t from, std::size_t to) const {
    if (to - from < kMinKnownLength) return false;
    std::vector<Span> found;
    impl->findKnown(view(from, to), found);
    return !found.empty();
  }

  void emit(std::string& out) {
    std::size_t limit = classified;
    if (!rawDone) limit = std::min(limit, raw->final());
    if (stringOpen) limit = std::min(limit, cursorRaw);
    while (outPos < limit) {
      const std::size_t p = outPos;
      const std::uint8_t c = clsAt(p);
      const std::uint8_t kind = c & kKindMask;
      if (kind == kStruct) {
        std::size_t e = p + 1;
        while (e < limit && clsAt(e) == kStruct) ++e;
        out.append(text, p - base, e - p);
        inMarker = false;
        outPos = e;
        continue;
      }
      if (kind == kText) {
        if (covered(p) && reaches(kText)) {
          marker(out);
        } else {
          out += at(p);
          inMarker = false;
        }
        ++outPos;
        continue;
      }
      std::size_t e = p + 1;
      while (e < classified && (clsAt(e) & kKindMask) == kind && !(clsAt(e) & (kind == kNumber ? kTokenStart : kUnitStart))) ++e;
      if (e > limit) return;  // wait for the rest of the unit or number
      if ((c & kTokenStart) && kind != kNumber) {
        // A plain span that runs past the end of a held string ran over the JSON around
        // it: it is cut at the first quote of the decoded text (below). Whether it does
        // is known once the plain scan has decided the string's closing quote.
        if (endFor != p) {
          endFor = p;
          tokenEnd = p + 1;
          while (tokenEnd < classified && (clsAt(tokenEnd) & kKindMask) == kind) ++tokenEnd;
        }
        if (!(c & kStreamed) && !rawDone && raw->final() <= tokenEnd) return;
      }
      if (c & kTokenStart) {
        ++tokens;
        inMarker = false;
        runClipped = false;
        backslashes = 0;
        tokenHeld = !(c & kStreamed);
        if (kind == kValue) {
          current = places.front();
          places.pop_front();
        }
      }
      bool redact = kind == kNumber ? knownIn(p, e) : (c & kDecoded) != 0;
      // In a string, a plain span stops at a quote of the decoded text (the delimiter of
      // a JSON text inside it): the spans of the decoded scan, known values whole, cover
      // what lies past it.
      bool quote = false;
      if (kind != kNumber) {
        const Unit u = scanUnit(view(p, e), true);
        const bool isBackslash = u.decLen == 1 && u.decoded[0] == '\\';
        quote = u.decLen == 1 && u.decoded[0] == '"' && backslashes % 2 == 0;
        backslashes = isBackslash ? backslashes + 1 : 0;
      }
      for (std::size_t q = p; q < e; ++q) {
        if (!covered(q)) continue;
        const bool runaway = kind != kNumber && tokenHeld && raw->spans()[run].end > tokenEnd;
        if (quote && runaway) {
          reaches(kind);
          runClipped = true;
        } else if (!(runClipped && runaway) && reaches(kind)) {
          redact = true;
        }
      }
      if (kind == kNumber) {
        if (redact) {
          out.append(kRedactedNumber);
        } else {
          out.append(text, p - base, e - p);
        }
        inMarker = false;
      } else if (redact) {
        marker(out);
      } else {
        out.append(text, p - base, e - p);
        inMarker = false;
      }
      outPos = e;
    }
  }

  // Drops what is out once it is half the buffer, and plain spans long passed.
  void trim() {
    if (outPos > base && (outPos - base) * 2 >= text.size()) {
      text.erase(0, outPos - base);
      cls.erase(cls.begin(), cls.begin() + static_cast<std::ptrdiff_t>(outPos - base));
      base = outPos;
    }
    std::vector<Span>& spans = raw->spans();
    if (run > 1024) {
      spans.erase(spans.begin(), spans.begin() + static_cast<std::ptrdiff_t>(run));
      run = 0;
    }
  }

  void feed(std::string_view chunk, std::string& out) {
    while (!chunk.empty()) {
      const std::string_view slice = chunk.substr(0, kSlice);
      chunk.remove_prefix(slice.size());
      text.append(slice);
      cls.resize(text.size());
      raw->feed(slice);
      lex(false);
      flushDecoded();
      emit(out);
      trim();
    }
  }

  void finish(std::string& out) {
    lex(true);
    if (stringOpen) endString();  // cannot happen: the end settles every string
    raw->finish();
    rawDone = true;
    emit(out);
    reset();
  }
};

FormatStreamRedactor::FormatStreamRedactor(const Redactor& redactor, Format format)
    : FormatStreamRedactor(redactor, format,
                           {StreamRedactor::kMaxHold, StreamRedactor::kTail, StreamRedactor::kContext, kStringHold}) {}

FormatStreamRedactor::FormatStreamRedactor(const Redactor& redactor, Format format, Limits limits) : format_(format) {
  if (format == Format::kPlain) {
    plain_.reset(new StreamRedactor(redactor, {limits.maxHold, limits.tail, limits.context}));  // a private constructor
  } else {
    machine_ = std::make_unique<Machine>(redactor, redactor.impl_, format, limits);
  }
}

FormatStreamRedactor::FormatStreamRedactor(FormatStreamRedactor&&) noexcept = default;
FormatStreamRedactor& FormatStreamRedactor::operator=(FormatStreamRedactor&&) noexcept = default;
FormatStreamRedactor::~FormatStreamRedactor() = default;

void FormatStreamRedactor::feedInto(std::string_view chunk, std::string& out) {
  if (plain_) {
    plain_->feedInto(chunk, out);
  } else {
    machine_->feed(chunk, out);
  }
}

void FormatStreamRedactor::finishInto(std::string& out) {
  if (plain_) {
    plain_->finishInto(out);
  } else {
    machine_->finish(out);
  }
}

std::string FormatStreamRedactor::feed(std::string_view chunk) {
  std::string out;
  feedInto(chunk, out);
  return out;
}

std::string FormatStreamRedactor::finish() {
  std::string out;
  finishInto(out);
  return out;
}

std::string Redactor::redact(std::string_view text, Format format) const {
  if (format == Format::kPlain) return redact(text);
  FormatStreamRedactor stream(*this, format);
  std::string out;
  out.reserve(text.size());
  stream.feedInto(text, out);
  stream.finishInto(out);
  return out;
}

// The media type alone decides: "application/json; charset=utf-8" is JSON.
Format formatFor(std::string_view contentType) {
  std::string type;
  for (char c : contentType.substr(0, contentType.find(';'))) {
    if (c != ' ' && c != '\t') type += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  if (type == "text/event-stream") return Format::kEventStream;
  static constexpr std::string_view kJsonTypes[] = {"application/json",    "text/json",       "application/x-ndjson",
                                                    "application/ndjson",  "application/jsonl", "application/x-jsonlines",
                                                    "application/jsonlines"};
  for (std::string_view t : kJsonTypes) {
    if (type == t) return Format::kJson;
  }
  if (type.size() > 5 && type.ends_with("+json") && type.find('/') != std::string::npos) return Format::kJson;
  return Format::kPlain;
}

namespace detail {

FormatStreamRedactor FormatTesting::make(const Redactor& redactor, Format format, std::size_t maxHold, std::size_t tail,
                                         std::size_t context, std::size_t stringHold) {
  return FormatStreamRedactor(redactor, format, {maxHold, tail, context, stringHold});
}

std::string FormatTesting::whole(const Redactor& redactor, Format format, std::string_view text, std::size_t maxHold,
                                 std::size_t tail, std::size_t context, std::size_t stringHold) {
  FormatStreamRedactor s = make(redactor, format, maxHold, tail, context, stringHold);
  std::string out;
  s.feedInto(text, out);
  s.finishInto(out);
  return out;
}

std::size_t FormatTesting::held(const FormatStreamRedactor& stream) {
  if (stream.plain_) return StreamTesting::held(*stream.plain_);
  return stream.machine_->text.size() + stream.machine_->decoded.size() + stream.machine_->decFeed.size();
}

}  // namespace detail

}  // namespace pine::redact
