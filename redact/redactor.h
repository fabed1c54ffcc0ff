// Secret redaction: known values and patterned secrets become "[redacted]".
// Used by the supervisor on events, outgoing messages and log lines, and by
// `pinectl redact` so an operator can clean a log before sharing it.
#pragma once
#include <cstddef>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pine::redact {

namespace detail {
struct StreamTesting;
struct FormatTesting;
class SpanStream;
}

// How a text is laid out, so that redaction keeps it well-formed (see FormatStreamRedactor).
enum class Format {
  kPlain,        // any text: redact() and StreamRedactor
  kJson,         // JSON: one document, or a sequence of them (JSON lines)
  kEventStream,  // text/event-stream: SSE fields, `data:` payloads JSON or not
};

// The format of a body from its Content-Type (any case, parameters ignored):
// application/json, text/json, any type ending in +json (application/problem+json),
// application/x-ndjson, application/ndjson, application/jsonl, application/x-jsonlines
// -> kJson; text/event-stream -> kEventStream; anything else, or none -> kPlain.
Format formatFor(std::string_view contentType);

inline constexpr std::string_view kMarker = "[redacted]";
// Shorter known values would turn ordinary words into markers.
inline constexpr std::size_t kMinKnownLength = 8;

// A byte range [begin, end) of the input that is replaced by the marker.
struct Span {
  std::size_t begin = 0;
  std::size_t end = 0;
  bool operator==(const Span&) const = default;
};

class Redactor {
 public:
  static constexpr std::string_view kMarker = redact::kMarker;

  // A known value that is not used, and why. The reason never contains the value.
  struct Skipped {
    std::size_t index;   // position in the constructor's list
    std::string reason;
  };

  // Values shorter than kMinKnownLength are skipped (see skipped()); patterns still apply.
  explicit Redactor(std::vector<std::string> knownSecrets);
  Redactor(const Redactor&);
  Redactor& operator=(const Redactor&);
  Redactor(Redactor&&) noexcept;
  Redactor& operator=(Redactor&&) noexcept;
  ~Redactor();

  // Every method is const and keeps no per-call state: safe from many threads at once.
  std::string redact(std::string_view text) const;
  // The same, keeping a text of that format well-formed (FormatStreamRedactor over the
  // whole text); kPlain is redact(text).
  std::string redact(std::string_view text, Format format) const;
  // The same into a caller's buffer (cleared first): a long-lived caller reuses its
  // capacity instead of faulting in fresh pages for every large text.
  void redactInto(std::string_view text, std::string& out) const;
  // The ranges redact() replaces: sorted, merged, non-overlapping.
  std::vector<Span> find(std::string_view text) const;

  // Copies in to out, redacted, through a StreamRedactor. Reads line by line (flushing
  // whenever the input has nothing more buffered, so `tail -f | pinectl redact` stays
  // live); a line waits only while a match that may span lines is still open before it.
  void redactStream(std::istream& in, std::ostream& out) const;

  const std::vector<Skipped>& skipped() const;
  // Known values in use (each also matched in its JSON-escaped, URL-encoded and base64 forms).
  std::size_t knownCount() const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
  friend class StreamRedactor;
  friend class FormatStreamRedactor;
};

// Chunked input from any source (pipes, sockets): feed() returns the redacted output
// that is final so far; finish() returns the rest. Concatenated, the results equal
// redact() of the whole input, however the input was split.
//
// That holds by construction: output is released only up to a line end that no match
// covers and before which every match is decided, i.e. could not change whatever text
// followed. So a line waits while a match that may span lines is open before it: a
// private key block until its END line (looked for within 64 KiB, whatever bytes the
// body holds), a quoted value carried on by a backslash or an open shell quote (at most
// 4 KiB past its line), the first lines of a multi-line known value, and a line itself
// until its newline.
//
// Memory is bounded: when kMaxHold bytes pass without such a line end (one very long
// line, or matches chained across every line end), the stream cuts inside the held
// text, after a space or punctuation in its second half and at least kTail bytes before
// its end, where no match is torn, and reads on as if a line started there (with
// kContext bytes of look-behind). A match that covers the whole region where a cut may
// go (one longer than kTail) is redacted from the cut to the end of its line. redact()
// follows the same rule for texts of kMaxHold bytes or more, so the two still agree.
class StreamRedactor {
 public:
  explicit StreamRedactor(const Redactor& redactor);
  std::string feed(std::string_view chunk);
  std::string finish();

  static constexpr std::size_t kMaxHold = 1 << 20;
  static constexpr std::size_t kTail = 64 << 10;
  static constexpr std::size_t kContext = 4 << 10;

 private:
  friend class Redactor;
  friend struct detail::StreamTesting;
  friend class detail::SpanStream;
  friend class FormatStreamRedactor;
  struct Limits {
    std::size_t maxHold, tail, context;
  };
  StreamRedactor(const Redactor& redactor, Limits limits);

  void feedInto(std::string_view chunk, std::string& out);
  void finishInto(std::string& out);
  void advance(std::string& out);
  bool worthDeciding(std::size_t lineEnd) const;
  void decide(std::size_t lineEnd, std::string& out);
  std::size_t knownHold(std::string_view view) const;
  void cut(std::string& out);
  bool swallow(bool finishing);
  void emit(std::size_t to, const std::vector<Span>& spans, std::string& out);
  void startSegment(std::size_t at, std::size_t floor);
  void trim();

  std::shared_ptr<const Redactor::Impl> impl_;
  Limits limits_;
  std::string pending_;           // input from base_ on: look-behind, then what is not out yet
  std::size_t base_ = 0;          // input offset of pending_[0]
  std::size_t emitted_ = 0;       // the input before this offset is out
  std::size_t segment_ = 0;       // where the text was last cut (read as a line start)
  std::size_t floor_ = 0;         // segment_ less its look-behind
  std::size_t anchor_ = 0;        // the window of kMaxHold bytes the cut rule looks at starts here
  std::size_t scanFrom_ = 0;      // the pattern scan resumes here
  std::size_t knownFrom_ = 0;     // known values that start before this are in spans_ (or out)
  std::size_t lineEnd_ = 0;       // just past the last '\n' seen inside the window
  std::size_t seenTo_ = 0;        // '\n' has been looked for up to here
  std::size_t decidedTo_ = 0;     // the view end of the last decision
  std::size_t open_ = 0;          // a match from here needs more text (npos: none)
  std::size_t hold_ = 0;          // a multi-line known value may start here (npos: none)
  std::vector<Span> spans_;       // final spans not yet out, in input offsets
  bool carry_ = false;            // a match ran across the last cut: redact on to its line end
  bool inSpan_ = false;           // the output so far ends inside a span (its marker is out)
  bool quiet_ = false;            // spans only (collect_), no output text
  std::vector<Span>* collect_ = nullptr;  // Redactor::find() on a long text: the spans as output
};

// Redaction that keeps JSON and server-sent events well-formed, streamed like
// StreamRedactor: feed() returns what is final, finish() the rest, and the results
// concatenated equal the whole text fed at once, however it was split.
//
// kJson and kEventStream find secrets in two ways: the plain scan over the raw text (the
// spans redact() would replace), and a scan of the *decoded* contents of every JSON
// string, keys too, so that a secret spelled with escapes (`\u0041PI_KEY=`, `https:\/\/`,
// a PEM block with `\u000a`) is found. A string of up to kStringHold decoded bytes is
// scanned whole, and so are the decoded contents of the strings inside it, two levels
// down (a tool argument is JSON inside a JSON string); a longer one is scanned as a stream.
//
// Replacements are made only where they keep the text well-formed: inside a string,
// whole escape sequences and whole UTF-8 characters become the marker; a number holding
// a known value becomes the string "[redacted]"; quotes, punctuation, whitespace,
// true/false/null and the SSE framing (`data:`, `event:`, the space after the colon,
// line ends) are never replaced. So valid JSON stays valid, and an event stream keeps
// every event and field. A span of the plain scan replaces the first string, key or
// number it reaches, and every later string *value* at the same depth under the same key
// (the next delta of the same field, in a later event too); it leaves other fields it
// runs over (a private key header without its END runs to the end of its line in the
// plain scan: that must not blank "usage" or "type" in the same event). Such a span that
// runs out of a held string, and a pattern found in its decoded text, stop at the first
// quote of that decoded text (the delimiter of the JSON inside it), so a JSON-encoded tool
// argument keeps its quotes and stays valid too; known values go whole wherever they are.
//
// Text that is not JSON where JSON is expected (a syntax error, `[DONE]`, a non-JSON
// `data:` payload, any other SSE field value, a comment, a line that is no field) is
// plain text from the error on: to the end of its line (kJson, which then reads the next
// line as JSON again) or of its event's data (kEventStream), redacted like redact() does.
// Nothing is passed because parsing failed. kJson reads whitespace-separated JSON values
// (a document, JSON lines); an event's data lines are joined as SSE joins them, so one
// JSON value may span several `data:` lines. Line ends are \n, \r\n or \r.
//
// Memory: the plain scan holds what a StreamRedactor holds (kMaxHold); a string longer
// than kStringHold is scanned by a stream capped at kMaxHold / 4 decoded bytes (six raw
// bytes each at worst, \u0041); the redactor's own copy of the input is at most about
// 2 x kMaxHold, however long the input. A number longer than kMaxNumber or nesting deeper
// than kMaxDepth is a syntax error (plain text from there).
class FormatStreamRedactor {
 public:
  FormatStreamRedactor(const Redactor& redactor, Format format);
  FormatStreamRedactor(FormatStreamRedactor&&) noexcept;
  FormatStreamRedactor& operator=(FormatStreamRedactor&&) noexcept;
  ~FormatStreamRedactor();

  std::string feed(std::string_view chunk);
  std::string finish();  // and ready for another input
  void feedInto(std::string_view chunk, std::string& out);  // appends to out
  void finishInto(std::string& out);
  Format format() const { return format_; }

  static constexpr std::size_t kStringHold = 256 << 10;
  static constexpr std::size_t kMaxNumber = 16 << 10;
  static constexpr std::size_t kMaxDepth = 1 << 14;

  struct Machine;

 private:
  friend struct detail::FormatTesting;
  struct Limits {
    std::size_t maxHold, tail, context, stringHold;
  };
  FormatStreamRedactor(const Redactor& redactor, Format format, Limits limits);

  Format format_;
  std::unique_ptr<StreamRedactor> plain_;  // kPlain
  std::unique_ptr<Machine> machine_;       // kJson, kEventStream
};

}  // namespace pine::redact
