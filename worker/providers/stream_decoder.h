// Internal: what every decoder shares. Splits the body into SSE events (any line ending,
// comments, multi-line data, a last event without its blank line) or, when the body is
// a plain JSON document, keeps it whole; records the first error for finish().
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "worker/providers/provider.h"

namespace pine::model::detail {

class EventStreamDecoder : public StreamDecoder {
 public:
  void feed(std::string_view bytes) final;
  Turn finish() final;
  bool failed() const final { return error_.has_value(); }

  // Longest SSE line, and largest plain JSON answer, accepted.
  static constexpr std::size_t kMaxLine = 8u << 20;
  static constexpr std::size_t kMaxBody = 32u << 20;

 protected:
  explicit EventStreamDecoder(std::string formatName) : format_(std::move(formatName)) {}
  virtual void onEvent(std::string_view event, std::string_view data) = 0;  // one SSE event
  virtual void onWhole(const nlohmann::json& body) = 0;                     // a non-streamed answer
  virtual void onEnd() = 0;  // the stream ended: check it was complete, fill turn_

  void fail(ProviderError e);
  void malformed(const std::string& what);
  void truncated(const std::string& what);
  // JSON of one event, or nullopt after recording a Malformed error.
  std::optional<nlohmann::json> parse(std::string_view data);
  void addText(std::string_view t);
  const std::string& format() const { return format_; }
  int events() const { return events_; }

  Turn turn_;

 private:
  void line(std::string_view l);
  void dispatch();

  enum class Mode { Unknown, Sse, Json } mode_ = Mode::Unknown;
  std::string format_;
  std::string buf_;  // SSE: the unfinished line; JSON: the body so far
  bool afterCR_ = false;
  std::string event_, data_;
  bool hasData_ = false;
  int events_ = 0;
  bool atEnd_ = false;
  std::optional<ProviderError> error_;
};

// Helpers shared by the formats.
const nlohmann::json* member(const nlohmann::json& j, const char* key);  // null when absent or not an object
std::string stringAt(const nlohmann::json& j, const char* key);          // "" unless a string
long long intAt(const nlohmann::json& j, const char* key);               // 0 unless a number
// Printable, bounded text from a provider (error messages): control characters become spaces.
std::string cleanText(std::string_view text, std::size_t max = 500);

}  // namespace pine::model::detail
