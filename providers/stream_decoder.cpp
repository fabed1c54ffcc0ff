#include "providers/stream_decoder.h"

#include <cmath>
#include <cstdint>
#include <new>

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
  if (nestsDeeperThan(data, kMaxDepth)) {
    malformed("event " + std::to_string(events_) + " nests JSON more than " + std::to_string(kMaxDepth) + " levels deep");
    return std::nullopt;
  }
  // Without exceptions nlohmann reports every problem (a number beyond a double too) as discarded.
  auto j = nlohmann::json::parse(data, nullptr, false);
  if (j.is_discarded()) {
    if (atEnd_) {
      truncated("the last event stops in the middle (" + std::to_string(data.size()) + " bytes of JSON)");
      return std::nullopt;
    }
    malformed("event " + std::to_string(events_) + " is not valid JSON (it starts '" + cleanText(data, 60) + "')");
    return std::nullopt;
  }
  return j;
}

void EventStreamDecoder::addText(std::string_view t) {
  if (t.empty()) return;
  turn_.text.append(t);
  if (onText) onText(t);
}

template <typename F>
void EventStreamDecoder::guarded(F&& step) {
  // The formats read JSON of any shape: whatever slips past their checks is a
  // malformed answer, never an exception out of feed() (a C callback) or finish().
  try {
    step();
  } catch (const ProviderError& e) {
    fail(e);
  } catch (const Unreadable& e) {
    malformed(e.what());
  } catch (const nlohmann::json::exception& e) {
    malformed(std::string("it does not have the expected shape (") + cleanText(e.what(), 200) + ")");
  } catch (const std::bad_alloc&) {
    malformed("it is too large to hold in memory");
  } catch (const std::exception& e) {
    malformed(cleanText(e.what(), 200));
  } catch (...) {
    malformed("reading it failed unexpectedly");
  }
}

void EventStreamDecoder::feed(std::string_view bytes) {
  if (error_) return;
  guarded([&] { feedBytes(bytes); });
}

void EventStreamDecoder::feedBytes(std::string_view bytes) {
  if (error_) return;
  if (mode_ == Mode::Unknown) {
    // Decided by the first byte that is not white space (after a UTF-8 BOM, stripped once).
    buf_.append(bytes);
    if (!bomChecked_) {
      static constexpr std::string_view kBom = "\xEF\xBB\xBF";
      if (buf_.size() < kBom.size() && kBom.substr(0, buf_.size()) == buf_) return;  // maybe a BOM: wait
      if (std::string_view(buf_).substr(0, kBom.size()) == kBom) buf_.erase(0, kBom.size());
      bomChecked_ = true;
    }
    std::size_t& i = blankPrefix_;  // resumed: white space that trickles in is scanned once
    while (i < buf_.size() && (buf_[i] == ' ' || buf_[i] == '\t' || buf_[i] == '\r' || buf_[i] == '\n')) ++i;
    // Counted over the whole prefix, so the verdict does not depend on how it was split.
    if (i > kMaxLine) {
      malformed("the answer starts with more than " + std::to_string(kMaxLine >> 20) + " MB of white space");
      return;
    }
    if (i == buf_.size()) return;
    mode_ = (buf_[i] == '{' || buf_[i] == '[') ? Mode::Json : Mode::Sse;
    bytes = {};
    if (mode_ == Mode::Sse) {
      std::string all = std::move(buf_);
      buf_.clear();
      feedBytes(all);  // the copy lives until this returns
      return;
    }
  }
  if (mode_ == Mode::Json) {
    buf_.append(bytes);
    if (buf_.size() > kMaxBody) malformed("the JSON answer is larger than " + std::to_string(kMaxBody >> 20) + " MB");
    return;
  }
  auto tooLong = [&] { malformed("a line of the stream is longer than " + std::to_string(kMaxLine >> 20) + " MB"); };
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
      if (buf_.size() > kMaxLine) tooLong();
      return;
    }
    std::string_view piece = bytes.substr(pos, end - pos);
    // The same limit whether the line came in one piece or many.
    if (buf_.size() + piece.size() > kMaxLine) return tooLong();
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
  if (!error_) guarded([&] { finishBody(); });
  if (error_) throw *error_;
  return std::move(turn_);
}

void EventStreamDecoder::finishBody() {
  switch (mode_) {
    case Mode::Unknown:
      truncated("the body was empty");
      break;
    case Mode::Json: {
      if (nestsDeeperThan(buf_, kMaxDepth)) {
        malformed("the JSON answer nests more than " + std::to_string(kMaxDepth) + " levels deep");
        break;
      }
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(buf_);
      } catch (const nlohmann::json::parse_error& e) {
        if (e.byte > buf_.size()) {  // the parser ran out of input
          truncated("the JSON answer stops in the middle (" + std::to_string(buf_.size()) + " bytes)");
          break;
        }
      } catch (const nlohmann::json::exception& e) {  // out_of_range: a number beyond a double (7e807)
        malformed("the JSON answer holds a number that cannot be read (" + cleanText(e.what(), 200) + ")");
        break;
      }
      if (!j.is_object())
        malformed("the body is neither an event stream nor a JSON object (it starts '" + cleanText(buf_, 60) + "')");
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

long long countAt(const nlohmann::json& j, const char* key, const std::string& field, long long absent) {
  const auto* m = member(j, key);
  if (!m) return absent;
  auto refuse = [&](const std::string& why) -> long long {
    throw Unreadable(field + " is " + cleanText(m->dump(), 40) + ", " + why);
  };
  if (m->is_number_unsigned()) {
    auto v = m->get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(kMaxCount)) return refuse("more than " + std::to_string(kMaxCount));
    return static_cast<long long>(v);
  }
  if (m->is_number_integer()) {
    auto v = m->get<std::int64_t>();
    if (v < 0) return refuse("below 0");
    if (v > kMaxCount) return refuse("more than " + std::to_string(kMaxCount));
    return v;
  }
  if (m->is_number_float()) {
    // Checked before the conversion: casting a double beyond long long is undefined.
    double d = m->get<double>();
    if (!(d >= 0)) return refuse("below 0");
    if (d > static_cast<double>(kMaxCount)) return refuse("more than " + std::to_string(kMaxCount));
    if (d != std::floor(d)) return refuse("not a whole number");
    return static_cast<long long>(d);
  }
  return refuse("not a number");
}

bool nestsDeeperThan(std::string_view json, int max) {
  int depth = 0;
  bool inString = false, escaped = false;
  for (char c : json) {
    if (inString) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

namespace {

// Bytes of the well-formed UTF-8 character at s[i] (the same rules as nlohmann's
// dump: no overlong forms, no surrogates, nothing past U+10FFFF), or 0.
std::size_t utf8Length(std::string_view s, std::size_t i) {
  auto at = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  auto cont = [&](std::size_t k) { return (at(k) & 0xC0) == 0x80; };
  const unsigned c = at(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return at(1) >= lo && at(1) <= hi && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return at(1) >= lo && at(1) <= hi && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::string cleanText(std::string_view text, std::size_t max) {
  // The result goes into error messages that are logged and sent as JSON: it must be
  // valid UTF-8 (a stray byte becomes '?') and never end inside a character.
  std::string out;
  out.reserve(std::min(text.size(), max) + 3);
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8Length(text, i);
    if (out.size() + std::max<std::size_t>(n, 1) > max) {
      out += "...";
      break;
    }
    if (n == 0) {
      out.push_back('?');
      ++i;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (n == 1) out.push_back(c < 0x20 || c == 0x7f ? ' ' : static_cast<char>(c));
    else out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace detail
}  // namespace pine::model
