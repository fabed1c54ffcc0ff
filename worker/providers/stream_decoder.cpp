#include "worker/providers/stream_decoder.h"

namespace pine::model {

StreamDecoder::~StreamDecoder() = default;
Provider::~Provider() = default;

namespace detail {

void EventStreamDecoder::fail(ProviderError e) {
  if (!error_) error_.emplace(std::move(e));
}

void EventStreamDecoder::malformed(const std::string& what) {
  fail(ProviderError(ProviderError::Kind::Malformed,
                     "the " + format_ + " answer could not be read: " + what + "; the answer was not used"));
}

void EventStreamDecoder::truncated(const std::string& what) {
  fail(ProviderError(ProviderError::Kind::Truncated,
                     "the " + format_ + " answer was cut off: " + what +
                         "; the partial answer was not used (the connection or the server failed; try again)",
                     0, false, true));
}

std::optional<nlohmann::json> EventStreamDecoder::parse(std::string_view data) {
  auto j = nlohmann::json::parse(data, nullptr, false);
  if (j.is_discarded()) {
    if (atEnd_) {
      truncated("the last event stops in the middle (" + std::to_string(data.size()) + " bytes of JSON)");
      return std::nullopt;
    }
    malformed("event " + std::to_string(events_) + " is not valid JSON (it starts '" +
              cleanText(data.substr(0, 60)) + "')");
    return std::nullopt;
  }
  return j;
}

void EventStreamDecoder::addText(std::string_view t) {
  if (t.empty()) return;
  turn_.text.append(t);
  if (onText) onText(t);
}

void EventStreamDecoder::feed(std::string_view bytes) {
  if (error_) return;
  if (mode_ == Mode::Unknown) {
    // Decided by the first byte that is not white space (or a UTF-8 BOM).
    buf_.append(bytes);
    if (buf_.compare(0, 3, "\xEF\xBB\xBF") == 0) buf_.erase(0, 3);
    std::size_t i = 0;
    while (i < buf_.size() && (buf_[i] == ' ' || buf_[i] == '\t' || buf_[i] == '\r' || buf_[i] == '\n')) ++i;
    if (i == buf_.size() || (buf_.size() < 3 && buf_[0] == '\xEF')) {
      if (buf_.size() > kMaxLine) malformed("the answer starts with more than " + std::to_string(kMaxLine >> 20) + " MB of white space");
      return;
    }
    mode_ = (buf_[i] == '{' || buf_[i] == '[') ? Mode::Json : Mode::Sse;
    bytes = {};
    if (mode_ == Mode::Sse) {
      std::string all = std::move(buf_);
      buf_.clear();
      bytes = all;
      feed(bytes);  // the copy lives until this returns
      return;
    }
  }
  if (mode_ == Mode::Json) {
    buf_.append(bytes);
    if (buf_.size() > kMaxBody) malformed("the JSON answer is larger than " + std::to_string(kMaxBody >> 20) + " MB");
    return;
  }
  std::size_t pos = 0;
  while (pos < bytes.size() && !error_) {
    if (afterCR_ && bytes[pos] == '\n') {  // the \n of a \r\n split across feeds
      afterCR_ = false;
      ++pos;
      continue;
    }
    afterCR_ = false;
    std::size_t end = bytes.find_first_of("\r\n", pos);
    if (end == std::string_view::npos) {
      buf_.append(bytes.substr(pos));
      if (buf_.size() > kMaxLine) malformed("a line of the stream is longer than " + std::to_string(kMaxLine >> 20) + " MB");
      return;
    }
    std::string_view piece = bytes.substr(pos, end - pos);
    if (buf_.empty()) {
      line(piece);
    } else {
      buf_.append(piece);
      std::string whole = std::move(buf_);
      buf_.clear();
      line(whole);
    }
    if (bytes[end] == '\r') {
      if (end + 1 < bytes.size()) {
        pos = end + (bytes[end + 1] == '\n' ? 2 : 1);
      } else {
        afterCR_ = true;
        pos = end + 1;
      }
    } else {
      pos = end + 1;
    }
  }
}

void EventStreamDecoder::line(std::string_view l) {
  if (l.empty()) {
    dispatch();
    return;
  }
  if (l.front() == ':') return;  // a comment (keep-alive)
  std::size_t colon = l.find(':');
  std::string_view field = l.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : l.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (hasData_) data_.push_back('\n');
    data_.append(value);
    hasData_ = true;
  } else if (field == "event") {
    event_.assign(value);
  }
  // id, retry and unknown fields mean nothing here.
}

void EventStreamDecoder::dispatch() {
  if (hasData_) {
    ++events_;
    onEvent(event_, data_);
  }
  event_.clear();
  data_.clear();
  hasData_ = false;
}

Turn EventStreamDecoder::finish() {
  if (!error_) {
    switch (mode_) {
      case Mode::Unknown:
        truncated("the body was empty");
        break;
      case Mode::Json: {
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(buf_);
        } catch (const nlohmann::json::parse_error& e) {
          if (e.byte > buf_.size()) {  // the parser ran out of input
            truncated("the JSON answer stops in the middle (" + std::to_string(buf_.size()) + " bytes)");
            break;
          }
        }
        if (!j.is_object())
          malformed("the body is neither an event stream nor a JSON object (it starts '" +
                    cleanText(std::string_view(buf_).substr(0, 60)) + "')");
        else
          onWhole(j);
        break;
      }
      case Mode::Sse:
        // The server may close without the final newline or blank line.
        if (!buf_.empty()) {
          atEnd_ = true;  // an unfinished last line that does not parse was cut, not malformed
          std::string last = std::move(buf_);
          buf_.clear();
          line(last);
        }
        if (!error_) dispatch();
        if (!error_) onEnd();
        break;
    }
  }
  if (error_) throw *error_;
  return std::move(turn_);
}

const nlohmann::json* member(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string stringAt(const nlohmann::json& j, const char* key) {
  const auto* m = member(j, key);
  return m && m->is_string() ? m->get<std::string>() : std::string();
}

long long intAt(const nlohmann::json& j, const char* key) {
  const auto* m = member(j, key);
  if (!m || !m->is_number()) return 0;
  return m->is_number_float() ? static_cast<long long>(m->get<double>()) : m->get<long long>();
}

std::string cleanText(std::string_view text, std::size_t max) {
  std::string out;
  out.reserve(std::min(text.size(), max));
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max) {
      // Do not end inside a UTF-8 character.
      while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
      if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0x80)) out.pop_back();
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(text[i]);
    out.push_back(c < 0x20 || c == 0x7f ? ' ' : static_cast<char>(c));
  }
  return out;
}

}  // namespace detail
}  // namespace pine::model
