// Internal: what every decoder shares. Splits the body into SSE events (any line ending,
// comments, multi-line data, a last event without its blank line) or, when the body is
// a plain JSON document, keeps it whole; records the first error for finish().
// Whatever a format's onEvent/onWhole/onEnd throws (Unreadable from the readers below,
// nlohmann's type_error or out_of_range, std::out_of_range...) becomes a Malformed
// error there, so feed() never throws and finish() throws only ProviderError.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "providers/provider.h"

namespace pine::model::detail {

class EventStreamDecoder : public StreamDecoder {
 public:
  void feed(std::string_view bytes) final;
  Turn finish() final;
  bool failed() const final { return error_.has_value(); }

  // Longest SSE line, and largest plain JSON answer, accepted.
  static constexpr std::size_t kMaxLine = 8u << 20;
  static constexpr std::size_t kMaxBody = 32u << 20;
  // Deepest JSON nesting accepted: nlohmann's copy and dump recurse once per level, so
  // an answer of 8 MB of '[' would overflow the stack; real answers nest a few levels.
  static constexpr int kMaxDepth = 256;

 protected:
  explicit EventStreamDecoder(std::string formatName) : format_(std::move(formatName)) {}
  virtual void onEvent(std::string_view event, std::string_view data) = 0;  // one SSE event
  virtual void onWhole(const nlohmann::json& body) = 0;                     // a non-streamed answer
  virtual void onEnd() = 0;  // the stream ended: check it was complete, fill turn_

  void fail(ProviderError e);
  void malformed(const std::string& what);
  void truncated(const std::string& what);
  // JSON of one event, or nullopt after recording a Malformed (or, for a cut last
  // event, Truncated) error.
  std::optional<nlohmann::json> parse(std::string_view data);
  void addText(std::string_view t);
  const std::string& format() const { return format_; }
  int events() const { return events_; }

  Turn turn_;

 private:
  void line(std::string_view l);
  void dispatch();
  void feedBytes(std::string_view bytes);
  void finishBody();
  // Runs a step of decoding; anything it throws is recorded as the answer's error.
  template <typename F>
  void guarded(F&& step);

  enum class Mode { Unknown, Sse, Json } mode_ = Mode::Unknown;
  std::string format_;
  std::string buf_;  // SSE: the unfinished line; JSON: the body so far
  bool bomChecked_ = false;  // a UTF-8 BOM is stripped once, at the very start
  std::size_t blankPrefix_ = 0;  // white space at the start of buf_ while the mode is unknown
  bool afterCR_ = false;
  std::string event_, data_;
  bool hasData_ = false;
  int events_ = 0;
  bool atEnd_ = false;
  std::optional<ProviderError> error_;
};

// Thrown by the readers below (and by a format's own checks) inside onEvent/onWhole/onEnd:
// what() says which field is wrong and why; the decoder records it as Malformed.
struct Unreadable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Helpers shared by the formats.
const nlohmann::json* member(const nlohmann::json& j, const char* key);  // null when absent or not an object
std::string stringAt(const nlohmann::json& j, const char* key);          // "" unless a string
// The one reader of numbers from a provider (token counts, indexes): `absent` when
// j[key] is absent or null; else a whole JSON number in 0..kMaxCount (12 and 12.0 are;
// 1.5, -3, 1e300, 18446744073709551650 and "12" are not), or Unreadable naming `field`.
long long countAt(const nlohmann::json& j, const char* key, const std::string& field, long long absent = 0);
// Whether JSON text nests deeper than `max` arrays/objects (strings are skipped).
bool nestsDeeperThan(std::string_view json, int max);
// Printable, bounded text from a provider (error messages): control characters become spaces.
std::string cleanText(std::string_view text, std::size_t max = 500);

}  // namespace pine::model::detail
