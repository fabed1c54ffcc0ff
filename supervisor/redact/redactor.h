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
  // The same into a caller's buffer (cleared first): a long-lived caller reuses its
  // capacity instead of faulting in fresh pages for every large text.
  void redactInto(std::string_view text, std::string& out) const;
  // The ranges redact() replaces: sorted, merged, non-overlapping.
  std::vector<Span> find(std::string_view text) const;

  // Copies in to out, redacted. Reads line by line (flushing whenever the input has
  // nothing more buffered, so `tail -f | pinectl redact` stays live) and holds back
  // only what a secret split across reads needs: an open PEM block, the start of a
  // multi-line known value, or the tail of a very long line.
  void redactStream(std::istream& in, std::ostream& out) const;

  const std::vector<Skipped>& skipped() const;
  // Known values in use (each also matched in its JSON-escaped, URL-encoded and base64 forms).
  std::size_t knownCount() const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
  friend class StreamRedactor;
};

// Chunked input from any source (pipes, sockets): feed() returns the redacted output
// that is final so far; finish() returns the rest. Concatenated, the results equal
// redact() of the whole input, however the input was split.
class StreamRedactor {
 public:
  explicit StreamRedactor(const Redactor& redactor);
  std::string feed(std::string_view chunk);
  std::string finish();

  // A line longer than this is cut inside, keeping kTail bytes of look-ahead and
  // kContext bytes of look-behind so no pattern is torn at the cut.
  static constexpr std::size_t kMaxHold = 1 << 20;
  static constexpr std::size_t kTail = 64 << 10;
  static constexpr std::size_t kContext = 4 << 10;

 private:
  std::string emit(std::size_t cut);
  std::size_t holdPoint(std::size_t cut) const;

  std::shared_ptr<const Redactor::Impl> impl_;
  std::string pending_;
  std::size_t done_ = 0;  // bytes at the front of pending_ already emitted (look-behind only)
};

}  // namespace pine::redact
