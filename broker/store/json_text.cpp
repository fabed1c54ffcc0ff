#include "broker/store/json_text.h"

#include <clocale>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>

#include "broker/store/rows.h"

namespace pine::store::detail {

using Json = nlohmann::ordered_json;  // ordered: a rewrite keeps the keys where they were

namespace {

// A JSON text as RFC 8259 writes it, read once without building anything: the check every
// event's payload passes on its way into the store (nlohmann's accept allocated four times for
// a small object). It says yes exactly where nlohmann::json::accept does (the json_text fuzz
// target compares them), except that a NUL byte anywhere is refused (nlohmann's lexer takes one
// for the end of its input, and would pass what follows it unread): strings in well-formed UTF-8,
// escapes with paired surrogates, no control bytes, no number too large for a double.
class Checker {
 public:
  explicit Checker(std::string_view text)
      : p_(reinterpret_cast<const unsigned char*>(text.data())), end_(p_ + text.size()) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") p_ += 3;  // a byte order mark first is passed over, as nlohmann does
  }

  bool text() {
    // Open containers, innermost last, a byte each: no allocation but for nesting deeper than 15.
    std::string open;
    for (;;) {
      space();  // a value
      if (p_ == end_) return false;
      switch (*p_) {
        case '{':
          ++p_;
          space();
          if (p_ < end_ && *p_ == '}') {
            ++p_;
            break;
          }
          open.push_back('{');
          if (!key()) return false;
          continue;
        case '[':
          ++p_;
          space();
          if (p_ < end_ && *p_ == ']') {
            ++p_;
            break;
          }
          open.push_back('[');
          continue;
        case '"':
          if (!string()) return false;
          break;
        case 't': if (!word("true")) return false; break;
        case 'f': if (!word("false")) return false; break;
        case 'n': if (!word("null")) return false; break;
        default:
          if (!number()) return false;
      }
      for (;;) {  // after a value: the next one, or the containers it closes
        space();
        if (open.empty()) return p_ == end_;
        if (p_ == end_) return false;
        char c = char(*p_++);
        if (c == ',') {
          if (open.back() == '{' && !key()) return false;
          break;
        }
        if (c != (open.back() == '{' ? '}' : ']')) return false;
        open.pop_back();
      }
    }
  }

 private:
  void space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  // A member's name and its colon; the value follows.
  bool key() {
    space();
    if (p_ == end_ || *p_ != '"' || !string()) return false;
    space();
    if (p_ == end_ || *p_ != ':') return false;
    ++p_;
    return true;
  }
  bool word(const char* w) {
    for (; *w; ++w, ++p_)
      if (p_ == end_ || *p_ != (unsigned char)*w) return false;
    return true;
  }
  bool hex4(unsigned* v) {
    *v = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      if (p_ == end_) return false;
      unsigned c = *p_, d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else return false;
      *v = *v * 16 + d;
    }
    return true;
  }
  bool string() {
    ++p_;  // the opening quote
    while (p_ < end_) {
      unsigned c = *p_++;
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c == '\\') {
        if (p_ == end_) return false;
        c = *p_++;
        if (c == 'u') {
          unsigned u;
          if (!hex4(&u)) return false;
          if (u >= 0xDC00 && u <= 0xDFFF) return false;  // a second half alone
          if (u >= 0xD800 && u <= 0xDBFF) {               // a first half: its second must follow
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            if (!hex4(&u) || u < 0xDC00 || u > 0xDFFF) return false;
          }
        } else if (!std::strchr("\"\\/bfnrt", int(c)) || c == 0) {
          return false;
        }
      } else if (c >= 0x80 && !utf8Rest(c)) {
        return false;
      }
    }
    return false;  // no closing quote
  }
  // The bytes after a UTF-8 sequence's first, `c`: the well-formed sequences of RFC 3629 only.
  bool utf8Rest(unsigned c) {
    unsigned lo = 0x80, hi = 0xBF;
    int more;
    if (c >= 0xC2 && c <= 0xDF) more = 1;
    else if (c == 0xE0) more = 2, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) more = 2;
    else if (c == 0xED) more = 2, hi = 0x9F;
    else if (c == 0xF0) more = 3, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) more = 3;
    else if (c == 0xF4) more = 3, hi = 0x8F;
    else return false;
    for (int i = 0; i < more; ++i, ++p_, lo = 0x80, hi = 0xBF)
      if (p_ == end_ || *p_ < lo || *p_ > hi) return false;
    return true;
  }
  bool digits() {
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return true;
  }
  bool number() {
    const unsigned char* start = p_;
    if (*p_ == '-') ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') ++p_;
    else if (!digits()) return false;
    bool integer = true;
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (!digits()) return false;
      integer = false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits()) return false;
      integer = false;
    }
    // Up to 18 digits always fit; otherwise the value must be a finite double, as nlohmann
    // reads it (an integer too large for 64 bits becomes a double there too).
    if (integer && p_ - start <= 19) return true;
    return finite(std::string_view(reinterpret_cast<const char*>(start), size_t(p_ - start)));
  }
  static bool finite(std::string_view token) {
    // strtod reads the locale's decimal point, as nlohmann has it do.
    std::string copy(token);
    char point = *std::localeconv()->decimal_point;
    for (auto& ch : copy)
      if (ch == '.') ch = point ? point : '.';
    return std::isfinite(std::strtod(copy.c_str(), nullptr));
  }

  const unsigned char* p_;
  const unsigned char* end_;
};

}  // namespace

bool isJson(const std::string& text) { return Checker(text).text(); }

void requireJson(const std::string& text, const std::string& what) {
  if (!isJson(text))
    throw StoreError(what + " is not valid JSON text; pass JSON (for example \"{}\", \"null\" or a quoted string)");
}

namespace {

bool walk(Json& j, const TextFn& fn) {
  bool changed = false;
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    std::string r = fn(s);
    if (r != s) j = r, changed = true;
  } else if (j.is_array()) {
    for (auto& v : j) changed |= walk(v, fn);
  } else if (j.is_object()) {
    Json out = Json::object();
    for (auto& [k, v] : j.items()) {
      std::string key = fn(k);
      changed |= key != k;
      Json value = v;
      changed |= walk(value, fn);
      out[key] = std::move(value);
    }
    if (changed) j = std::move(out);
  }
  return changed;
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

std::string rewriteJson(const std::string& text, const TextFn& fn) {
  std::string out = fn(text);
  Json j = Json::parse(out, nullptr, false);
  if (j.is_discarded()) return dump(Json(out));
  // Only re-serialise when a decoded string changed: otherwise the text keeps its form.
  if (walk(j, fn)) out = dump(j);
  return out;
}

}  // namespace pine::store::detail
