#include "tests/telegram/fake_bot_api.h"
#include "common/send_no_signal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <ctime>
#include <stdexcept>
#include <utility>

namespace pine::telegram::test {

using nlohmann::json;

struct FakeBotApi::Request {
  std::string verb, path, query, body;
  std::map<std::string, std::string> headers;  // names lower-cased
  bool keepAlive = true;
};

struct FakeBotApi::Response {
  int status = 200;
  std::string body;
  std::string contentType = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

namespace {

constexpr std::size_t kFakeTgMaxHead = 64 * 1024;
constexpr std::size_t kFakeTgMaxBody = 64 * 1024 * 1024;
constexpr std::size_t kFakeTgMaxText = 4096;                // UTF-16 units, after parsing
constexpr std::size_t kFakeTgMaxDownload = 20 * 1024 * 1024;  // getFile's limit for bots
constexpr int kFakeTgIdleSeconds = 60;

// A validation failure: answered as 400 with this description.
struct FakeTgBadRequest : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fakeTgFail(const std::string& description) { throw FakeTgBadRequest("Bad Request: " + description); }

std::string fakeTgLower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool fakeTgSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

int64_t fakeTgNow() { return static_cast<int64_t>(std::time(nullptr)); }

// ---- HTTP ---------------------------------------------------------------------------

const char* fakeTgReason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 409: return "Conflict";
    case 413: return "Request Entity Too Large";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
  }
}

void fakeTgWriteAll(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = pine::sendNoSignal(fd, s.data() + off, s.size() - off, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

// Buffered reads from a connection that give up at shutdown (the wake pipe turns
// readable) or after a long idle spell.
class FakeTgReader {
 public:
  FakeTgReader(int fd, int wakeFd) : fd_(fd), wakeFd_(wakeFd) {}

  // Until the buffer holds `delim` (its position), reading at most `limit` bytes.
  std::optional<std::size_t> until(const std::string& delim, std::size_t limit) {
    std::size_t from = 0;
    while (true) {
      auto at = buf_.find(delim, from);
      if (at != std::string::npos) return at;
      if (buf_.size() > limit) return std::nullopt;
      from = buf_.size() >= delim.size() ? buf_.size() - delim.size() + 1 : 0;
      if (!more()) return std::nullopt;
    }
  }
  bool atLeast(std::size_t n) {
    while (buf_.size() < n)
      if (!more()) return false;
    return true;
  }
  std::string take(std::size_t n) {
    std::string out = buf_.substr(0, n);
    buf_.erase(0, n);
    return out;
  }

 private:
  bool more() {
    pollfd p[2] = {{fd_, POLLIN, 0}, {wakeFd_, POLLIN, 0}};
    int r = ::poll(p, 2, kFakeTgIdleSeconds * 1000);
    if (r < 0 && errno == EINTR) return true;
    if (r <= 0 || (p[1].revents & POLLIN)) return false;
    char chunk[16384];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) return true;
    if (n <= 0) return false;
    buf_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  int fd_, wakeFd_;
  std::string buf_;
};

std::optional<std::string> fakeTgReadLine(FakeTgReader& in) {
  auto at = in.until("\r\n", kFakeTgMaxHead);
  if (!at) return std::nullopt;
  std::string line = in.take(*at);
  in.take(2);
  return line;
}

// A chunked body: hex sizes (extensions ignored), then a possibly empty trailer.
std::optional<std::string> fakeTgReadChunked(FakeTgReader& in) {
  std::string body;
  while (true) {
    auto line = fakeTgReadLine(in);
    if (!line) return std::nullopt;
    std::size_t size = 0;
    try {
      size = std::stoul(line->substr(0, line->find(';')), nullptr, 16);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (size == 0) break;
    if (body.size() + size > kFakeTgMaxBody || !in.atLeast(size + 2)) return std::nullopt;
    body += in.take(size);
    in.take(2);
  }
  while (true) {
    auto trailer = fakeTgReadLine(in);
    if (!trailer) return std::nullopt;
    if (trailer->empty()) return body;
  }
}

void fakeTgSplitTarget(const std::string& target, std::string& path, std::string& query) {
  auto q = target.find('?');
  path = target.substr(0, q);
  query = q == std::string::npos ? "" : target.substr(q + 1);
}

std::string fakeTgUrlDecode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> fakeTgUrlEncodedPairs(const std::string& s) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto end = s.find('&', start);
    if (end == std::string::npos) end = s.size();
    std::string part = s.substr(start, end - start);
    if (!part.empty()) {
      auto eq = part.find('=');
      out.emplace_back(fakeTgUrlDecode(part.substr(0, eq)),
                       eq == std::string::npos ? "" : fakeTgUrlDecode(part.substr(eq + 1)));
    }
    start = end + 1;
  }
  return out;
}

// ---- parameters -----------------------------------------------------------------------

// Form and query values are all strings, and JSON clients may send the JSON-serialized
// fields as strings too (the real API accepts both): give them their JSON types so the
// handlers and the recorded calls see one shape.
json fakeTgNormalize(const std::string& key, json value) {
  static const std::set<std::string> ints = {"chat_id", "message_id", "offset", "limit", "timeout",
                                             "reply_to_message_id", "cache_time", "message_thread_id",
                                             "duration", "from_chat_id"};
  static const std::set<std::string> bools = {"show_alert", "disable_notification", "protect_content",
                                              "allow_sending_without_reply", "disable_web_page_preview",
                                              "drop_pending_updates"};
  static const std::set<std::string> objects = {"reply_markup", "reply_parameters", "link_preview_options",
                                                "allowed_updates", "entities", "commands", "scope"};
  if (!value.is_string()) return value;
  const std::string s = value.get<std::string>();
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  const std::size_t sign = !s.empty() && s[0] == '-' ? 1 : 0;
  if (ints.count(key) && s.size() > sign && s.size() < 20 && std::all_of(s.begin() + sign, s.end(), digit))
    return std::stoll(s);
  if (bools.count(key) && (s == "true" || s == "1")) return true;
  if (bools.count(key) && (s == "false" || s == "0")) return false;
  if (objects.count(key)) {
    json parsed = json::parse(s, nullptr, false);
    if (!parsed.is_discarded()) return parsed;
  }
  return value;
}

std::optional<int64_t> fakeTgInt(const json& params, const char* key) {
  auto it = params.find(key);
  if (it == params.end() || it->is_null()) return std::nullopt;
  if (it->is_number_integer()) return it->get<int64_t>();
  fakeTgFail(std::string("wrong parameter ") + key);
}

std::string fakeTgString(const json& params, const char* key) {
  auto it = params.find(key);
  if (it == params.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  fakeTgFail(std::string("wrong parameter ") + key);
}

bool fakeTgBool(const json& params, const char* key) {
  auto it = params.find(key);
  return it != params.end() && it->is_boolean() && it->get<bool>();
}

int64_t fakeTgChatId(const json& params) {
  auto it = params.find("chat_id");
  if (it == params.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty()))
    fakeTgFail("chat_id is empty");
  if (!it->is_number_integer()) fakeTgFail("chat not found");  // "@name": no usernames here
  return it->get<int64_t>();
}

// ---- text -----------------------------------------------------------------------------

// UTF-16 length of valid UTF-8; nullopt when it is not valid.
std::optional<std::size_t> fakeTgUtf16Length(const std::string& s) {
  std::size_t units = 0;
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return std::nullopt;
    for (std::size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return std::nullopt;
    units += len == 4 ? 2 : 1;
    i += len;
  }
  return units;
}

void fakeTgAppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The entity at s[i] ('&'): the code point and its byte length. Only the named entities the
// Bot API documents, plus numeric ones.
std::optional<std::pair<uint32_t, std::size_t>> fakeTgHtmlEntity(const std::string& s, std::size_t i) {
  auto semi = s.find(';', i);
  if (semi == std::string::npos || semi - i > 12) return std::nullopt;
  std::string name = s.substr(i + 1, semi - i - 1);
  std::size_t len = semi - i + 1;
  if (name == "lt") return std::pair<uint32_t, std::size_t>{'<', len};
  if (name == "gt") return std::pair<uint32_t, std::size_t>{'>', len};
  if (name == "amp") return std::pair<uint32_t, std::size_t>{'&', len};
  if (name == "quot") return std::pair<uint32_t, std::size_t>{'"', len};
  if (name.size() < 2 || name[0] != '#') return std::nullopt;
  bool hex = name[1] == 'x' || name[1] == 'X';
  std::string digits = name.substr(hex ? 2 : 1);
  if (digits.empty() || digits.size() > 8) return std::nullopt;
  for (char c : digits)
    if (!(hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(static_cast<unsigned char>(c))))
      return std::nullopt;
  auto cp = static_cast<uint32_t>(std::stoul(digits, nullptr, hex ? 16 : 10));
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
  return std::pair<uint32_t, std::size_t>{cp, len};
}

struct FakeTgParsed {
  std::string text;                    // what the user sees
  json entities = json::array();       // MessageEntity objects, UTF-16 offsets
};

[[noreturn]] void fakeTgEntityError(const std::string& detail) { fakeTgFail("can't parse entities: " + detail); }

// Telegram's HTML subset: supported tags only, properly nested and closed; '<' and '&' only
// as markup. Builds the visible text and its entities.
class FakeTgHtml {
 public:
  explicit FakeTgHtml(const std::string& s) : s_(s) {}

  FakeTgParsed parse() {
    while (i_ < s_.size()) {
      if (s_[i_] == '&') {
        decodeEntity();
      } else if (s_[i_] == '<') {
        if (i_ + 1 < s_.size() && s_[i_ + 1] == '/') {
          endTag();
        } else {
          startTag();
        }
      } else {
        appendByte(s_[i_++]);
      }
    }
    if (!open_.empty()) entityError("Can't find end tag corresponding to start tag \"" + open_.back().name + "\"");
    std::stable_sort(out_.entities.begin(), out_.entities.end(), [](const json& a, const json& b) {
      return a["offset"].get<int64_t>() < b["offset"].get<int64_t>() ||
             (a["offset"] == b["offset"] && a["length"].get<int64_t>() > b["length"].get<int64_t>());
    });
    return std::move(out_);
  }

 private:
  struct Open {
    std::string name;
    std::size_t offset;  // UTF-16
    json entity;         // null: no entity
  };

  [[noreturn]] static void entityError(const std::string& detail) { fakeTgEntityError(detail); }

  void appendByte(char c) {
    auto u = static_cast<unsigned char>(c);
    if ((u & 0xC0) != 0x80) units_ += u >= 0xF0 ? 2 : 1;  // counted at the lead byte
    out_.text += c;
  }

  void decodeEntity() {
    auto entity = fakeTgHtmlEntity(s_, i_);
    if (!entity) entityError("Unescaped '&' at byte offset " + std::to_string(i_) + " (use &amp;)");
    fakeTgAppendUtf8(out_.text, entity->first);
    units_ += entity->first >= 0x10000 ? 2 : 1;
    i_ += entity->second;
  }

  void startTag() {
    const std::size_t begin = i_++;
    const std::size_t nameBegin = i_;
    while (i_ < s_.size() && !fakeTgSpace(s_[i_]) && s_[i_] != '>') ++i_;
    if (i_ >= s_.size()) entityError("Unclosed start tag at byte offset " + std::to_string(begin));
    std::string name = fakeTgLower(s_.substr(nameBegin, i_ - nameBegin));
    static const std::set<std::string> supported = {"a",   "b",          "strong", "i",    "em",   "u",
                                                    "ins", "s",          "strike", "del",  "span", "tg-spoiler",
                                                    "code", "pre",       "blockquote", "tg-emoji"};
    if (!supported.count(name))
      entityError("Unsupported start tag \"" + name + "\" at byte offset " + std::to_string(begin));
    auto attrs = attributes(name, begin);
    open_.push_back({name, units_, entityFor(name, attrs, begin)});
  }

  std::map<std::string, std::string> attributes(const std::string& tag, std::size_t begin) {
    std::map<std::string, std::string> attrs;
    while (true) {
      while (i_ < s_.size() && fakeTgSpace(s_[i_])) ++i_;
      if (i_ >= s_.size()) entityError("Unclosed start tag at byte offset " + std::to_string(begin));
      if (s_[i_] == '>') {
        ++i_;
        return attrs;
      }
      std::size_t nameBegin = i_;
      while (i_ < s_.size() && !fakeTgSpace(s_[i_]) && s_[i_] != '=' && s_[i_] != '>') ++i_;
      std::string name = fakeTgLower(s_.substr(nameBegin, i_ - nameBegin));
      if (name.empty())
        entityError("Empty attribute name in the tag \"" + tag + "\" at byte offset " + std::to_string(begin));
      while (i_ < s_.size() && fakeTgSpace(s_[i_])) ++i_;
      if (i_ >= s_.size() || s_[i_] != '=') {
        attrs[name] = "";  // a bare attribute, e.g. <blockquote expandable>
        continue;
      }
      ++i_;
      while (i_ < s_.size() && fakeTgSpace(s_[i_])) ++i_;
      attrs[name] = attributeValue(begin);
    }
  }

  std::string attributeValue(std::size_t begin) {
    if (i_ >= s_.size()) entityError("Unclosed start tag at byte offset " + std::to_string(begin));
    std::string raw;
    if (s_[i_] == '"' || s_[i_] == '\'') {
      auto close = s_.find(s_[i_], i_ + 1);
      if (close == std::string::npos) entityError("Unclosed start tag at byte offset " + std::to_string(begin));
      raw = s_.substr(i_ + 1, close - i_ - 1);
      i_ = close + 1;
    } else {
      std::size_t from = i_;
      while (i_ < s_.size() && !fakeTgSpace(s_[i_]) && s_[i_] != '>') ++i_;
      raw = s_.substr(from, i_ - from);
    }
    std::string value;  // entities inside values are decoded, a stray '&' kept
    for (std::size_t k = 0; k < raw.size();) {
      auto entity = raw[k] == '&' ? fakeTgHtmlEntity(raw, k) : std::nullopt;
      if (entity) {
        fakeTgAppendUtf8(value, entity->first);
        k += entity->second;
      } else {
        value += raw[k++];
      }
    }
    return value;
  }

  json entityFor(const std::string& name, const std::map<std::string, std::string>& attrs, std::size_t begin) {
    auto attr = [&](const char* key) -> std::optional<std::string> {
      auto it = attrs.find(key);
      if (it == attrs.end()) return std::nullopt;
      return it->second;
    };
    if (name == "b" || name == "strong") return {{"type", "bold"}};
    if (name == "i" || name == "em") return {{"type", "italic"}};
    if (name == "u" || name == "ins") return {{"type", "underline"}};
    if (name == "s" || name == "strike" || name == "del") return {{"type", "strikethrough"}};
    if (name == "tg-spoiler") return {{"type", "spoiler"}};
    if (name == "span") {
      if (attr("class") != "tg-spoiler")
        entityError("Tag \"span\" must have class \"tg-spoiler\" at byte offset " + std::to_string(begin));
      return {{"type", "spoiler"}};
    }
    if (name == "pre") return {{"type", "pre"}};
    if (name == "code") {
      // <pre><code class="language-x"> names the pre block's language instead.
      auto cls = attr("class");
      if (!open_.empty() && open_.back().name == "pre" && cls && cls->rfind("language-", 0) == 0) {
        if (!open_.back().entity.is_null()) open_.back().entity["language"] = cls->substr(9);
        return nullptr;
      }
      return {{"type", "code"}};
    }
    if (name == "blockquote") return {{"type", attr("expandable") ? "expandable_blockquote" : "blockquote"}};
    if (name == "tg-emoji") {
      auto id = attr("emoji-id");
      if (!id) return nullptr;
      return {{"type", "custom_emoji"}, {"custom_emoji_id", *id}};
    }
    // <a>: a link, or a mention of a user by id.
    auto href = attr("href");
    if (!href) return nullptr;
    const std::string mention = "tg://user?id=";
    if (href->rfind(mention, 0) == 0) {
      try {
        return {{"type", "text_mention"}, {"user", {{"id", std::stoll(href->substr(mention.size()))}}}};
      } catch (const std::exception&) {
        return nullptr;
      }
    }
    return {{"type", "text_link"}, {"url", *href}};
  }

  void endTag() {
    const std::size_t begin = i_;
    if (open_.empty()) entityError("Unexpected end tag at byte offset " + std::to_string(begin));
    i_ += 2;
    const std::size_t nameBegin = i_;
    while (i_ < s_.size() && !fakeTgSpace(s_[i_]) && s_[i_] != '>') ++i_;
    std::string name = fakeTgLower(s_.substr(nameBegin, i_ - nameBegin));
    if (!name.empty() && name != open_.back().name)
      entityError("Unmatched end tag at byte offset " + std::to_string(begin) + ", expected \"</" +
                  open_.back().name + ">\", found \"</" + name + ">\"");
    while (i_ < s_.size() && fakeTgSpace(s_[i_])) ++i_;
    if (i_ >= s_.size() || s_[i_] != '>')
      entityError("Can't find end tag corresponding to start tag \"" + open_.back().name + "\"");
    ++i_;
    Open tag = std::move(open_.back());
    open_.pop_back();
    if (!tag.entity.is_null() && units_ > tag.offset) {
      tag.entity["offset"] = tag.offset;
      tag.entity["length"] = units_ - tag.offset;
      out_.entities.push_back(std::move(tag.entity));
    }
  }

  const std::string& s_;
  std::size_t i_ = 0;
  std::size_t units_ = 0;
  std::vector<Open> open_;
  FakeTgParsed out_;
};

// The text as the user will see it, validated like sendMessage/editMessageText do.
// Markdown modes are not parsed: their text is counted as given.
FakeTgParsed fakeTgCheckText(const json& params) {
  std::string text = fakeTgString(params, "text");
  std::string mode = fakeTgLower(fakeTgString(params, "parse_mode"));
  if (!fakeTgUtf16Length(text)) fakeTgFail("text must be encoded in UTF-8");
  if (!mode.empty() && mode != "html" && mode != "markdown" && mode != "markdownv2")
    fakeTgFail("unsupported parse_mode");
  FakeTgParsed parsed;
  if (mode == "html") {
    parsed = FakeTgHtml(text).parse();
  } else {
    parsed.text = std::move(text);
  }
  if (std::all_of(parsed.text.begin(), parsed.text.end(), [](char c) { return fakeTgSpace(c); }))
    fakeTgFail("message text is empty");
  if (*fakeTgUtf16Length(parsed.text) > kFakeTgMaxText) fakeTgFail("message is too long");
  return parsed;
}

// Checks reply_markup; returns the inline keyboard markup a Message carries (reply
// keyboards are accepted but not part of the Message).
std::optional<json> fakeTgCheckMarkup(const json& params) {
  auto it = params.find("reply_markup");
  if (it == params.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) fakeTgFail("can't parse reply keyboard markup JSON object");
  if (!it->contains("inline_keyboard")) {
    if (it->contains("keyboard") || it->contains("remove_keyboard") || it->contains("force_reply")) return std::nullopt;
    fakeTgFail("can't parse reply keyboard markup JSON object");
  }
  const json& rows = (*it)["inline_keyboard"];
  if (!rows.is_array()) fakeTgFail("field \"inline_keyboard\" of the InlineKeyboardMarkup must be an Array");
  static const char* actions[] = {"url", "login_url", "switch_inline_query", "switch_inline_query_current_chat",
                                  "switch_inline_query_chosen_chat", "callback_game", "pay", "web_app", "copy_text"};
  for (const auto& row : rows) {
    if (!row.is_array()) fakeTgFail("field \"inline_keyboard\" of the InlineKeyboardMarkup must be an Array of Arrays");
    for (const auto& button : row) {
      if (!button.is_object()) fakeTgFail("can't parse inline keyboard button: InlineKeyboardButton must be an Object");
      if (!button.contains("text") || !button["text"].is_string())
        fakeTgFail("can't parse inline keyboard button: Can't find field \"text\"");
      if (button.contains("callback_data")) {
        const json& data = button["callback_data"];
        if (!data.is_string() || data.get<std::string>().empty() || data.get<std::string>().size() > 64)
          fakeTgFail("BUTTON_DATA_INVALID");
        continue;
      }
      if (std::none_of(std::begin(actions), std::end(actions), [&](const char* a) { return button.contains(a); }))
        fakeTgFail("can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard");
    }
  }
  return *it;
}

json fakeTgUserJson(const User& u, bool isBot = false) {
  json j = {{"id", u.id}, {"is_bot", isBot}, {"first_name", u.firstName}};
  if (!u.lastName.empty()) j["last_name"] = u.lastName;
  if (!u.username.empty()) j["username"] = u.username;
  return j;
}

// Bodies keep the real field order (ok first), which nlohmann::json's sorted keys would not.
std::string fakeTgErrorBody(int status, const std::string& description, std::optional<int> retryAfter = std::nullopt) {
  nlohmann::ordered_json j = {{"ok", false}, {"error_code", status}, {"description", description}};
  if (retryAfter) j["parameters"] = {{"retry_after", *retryAfter}};
  return j.dump();
}

std::string fakeTgOkBody(const json& result) { return "{\"ok\":true,\"result\":" + result.dump() + "}"; }

std::string fakeTgDefaultDescription(int status, std::optional<int> retryAfter) {
  if (status == 429)
    return retryAfter ? "Too Many Requests: retry after " + std::to_string(*retryAfter) : "Too Many Requests";
  return fakeTgReason(status);
}

// True when the client has closed its end (checked while a poll is held, so an abandoned
// poll frees its slot instead of turning the client's retry into a 409).
bool fakeTgPeerGone(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR)) return true;
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

std::string fakeTgExtension(const std::string& fileName) {
  auto dot = fileName.rfind('.');
  return dot == std::string::npos ? "" : fileName.substr(dot);
}

}  // namespace

// ---- lifetime -------------------------------------------------------------------------

FakeBotApi::FakeBotApi(std::string token) : token_(std::move(token)) {
  bot_ = User{1000001, "Pine Test Bot", "", "pine_test_bot"};
  auto colon = token_.find(':');
  if (colon != std::string::npos && colon > 0 && colon < 19 &&
      std::all_of(token_.begin(), token_.begin() + static_cast<std::ptrdiff_t>(colon),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    bot_.id = std::stoll(token_.substr(0, colon));

  if (::pipe(wakePipe_) != 0) throw std::runtime_error("fake bot api: pipe failed");
  for (int fd : wakePipe_) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  listenFd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listenFd_ < 0) throw std::runtime_error("fake bot api: socket failed");
  ::fcntl(listenFd_, F_SETFD, FD_CLOEXEC);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(listenFd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listenFd_, 64) != 0 ||
      ::getsockname(listenFd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("fake bot api: bind/listen on 127.0.0.1 failed");
  port_ = ntohs(a.sin_port);
  acceptThread_ = std::thread([this] { acceptLoop(); });
}

FakeBotApi::~FakeBotApi() {
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);  // a held poll is between its check and its wait, or waiting
  }
  changed_.notify_all();
  // Never drained: every reader's poll() sees it readable from now on.
  [[maybe_unused]] ssize_t w = ::write(wakePipe_[1], "x", 1);
  acceptThread_.join();
  {
    std::lock_guard<std::mutex> lock(connMu_);
    for (auto& c : connections_) c.thread.join();
  }
  ::close(listenFd_);
  ::close(wakePipe_[0]);
  ::close(wakePipe_[1]);
}

void FakeBotApi::acceptLoop() {
  while (!stop_) {
    pollfd p[2] = {{listenFd_, POLLIN, 0}, {wakePipe_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) <= 0) continue;
    if (p[1].revents & POLLIN) return;
    int fd = ::accept(listenFd_, nullptr, nullptr);
    if (fd < 0) continue;
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // A client that stops reading must not hold a connection thread (and so the destructor)
    // in send() forever.
    timeval sendTimeout{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, sizeof sendTimeout);
    std::lock_guard<std::mutex> lock(connMu_);
    // Finished connections are joined here, so a long test does not pile up threads.
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (it->done) {
        it->thread.join();
        it = connections_.erase(it);
      } else {
        ++it;
      }
    }
    Connection& c = connections_.emplace_back();
    c.thread = std::thread([this, fd, &c] {
      serveConnection(fd);
      ::close(fd);
      c.done = true;
    });
  }
}

// ---- one connection ---------------------------------------------------------------------

void FakeBotApi::serveConnection(int fd) {
  FakeTgReader in(fd, wakePipe_[0]);
  while (!stop_) {
    auto headEnd = in.until("\r\n\r\n", kFakeTgMaxHead);
    if (!headEnd) return;
    std::string head = in.take(*headEnd + 4);
    Request req;
    std::string version, target;
    {
      auto lineEnd = head.find("\r\n");
      std::string line = head.substr(0, lineEnd);
      auto sp1 = line.find(' '), sp2 = line.rfind(' ');
      if (sp1 == std::string::npos || sp2 == sp1) {
        fakeTgWriteAll(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
      }
      req.verb = line.substr(0, sp1);
      target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      version = line.substr(sp2 + 1);
      for (std::size_t at = lineEnd + 2; at < head.size();) {
        auto end = head.find("\r\n", at);
        std::string h = head.substr(at, end - at);
        at = end + 2;
        auto colon = h.find(':');
        if (colon == std::string::npos) continue;
        std::string value = h.substr(colon + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        value.erase(value.find_last_not_of(" \t") + 1);
        req.headers[fakeTgLower(h.substr(0, colon))] = value;
      }
    }
    fakeTgSplitTarget(target, req.path, req.query);
    std::string connection = fakeTgLower(req.headers.count("connection") ? req.headers["connection"] : "");
    req.keepAlive = version == "HTTP/1.0" ? connection == "keep-alive" : connection != "close";

    // libcurl asks before sending a POST body over 1 KiB and would otherwise stall a second.
    if (fakeTgLower(req.headers["expect"]) == "100-continue") fakeTgWriteAll(fd, "HTTP/1.1 100 Continue\r\n\r\n");
    if (fakeTgLower(req.headers["transfer-encoding"]).find("chunked") != std::string::npos) {
      auto body = fakeTgReadChunked(in);
      if (!body) return;
      req.body = std::move(*body);
    } else if (req.headers.count("content-length")) {
      std::size_t want = 0;
      try {
        want = std::stoul(req.headers["content-length"]);
      } catch (const std::exception&) {
        return;
      }
      if (want > kFakeTgMaxBody || !in.atLeast(want)) return;
      req.body = in.take(want);
    }

    auto resp = handle(req, fd);
    if (!resp) return;  // a scripted drop: close unanswered
    std::string out = "HTTP/1.1 " + std::to_string(resp->status) + " " + fakeTgReason(resp->status) + "\r\n";
    out += "Server: pine-fake-bot-api\r\n";
    out += "Content-Type: " + resp->contentType + "\r\n";
    out += "Content-Length: " + std::to_string(resp->body.size()) + "\r\n";
    for (const auto& [k, v] : resp->headers) out += k + ": " + v + "\r\n";
    out += req.keepAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    fakeTgWriteAll(fd, out + resp->body);
    if (!req.keepAlive) return;
  }
}

std::optional<FakeBotApi::Response> FakeBotApi::handle(const Request& req, int fd) {
  auto jsonResponse = [](int status, std::string body) {
    Response r;
    r.status = status;
    r.body = std::move(body);
    return r;
  };
  const Response notFound = jsonResponse(404, fakeTgErrorBody(404, "Not Found"));
  const Response unauthorized = jsonResponse(401, fakeTgErrorBody(401, "Unauthorized"));
  bool revoked;
  {
    std::lock_guard<std::mutex> lock(mu_);
    revoked = revoked_;
  }

  // /file/bot<TOKEN>/<file_path>: a download.
  const std::string filePrefix = "/file/bot";
  if (req.path.rfind(filePrefix, 0) == 0) {
    auto slash = req.path.find('/', filePrefix.size());
    if (slash == std::string::npos) return notFound;
    if (revoked || req.path.substr(filePrefix.size(), slash - filePrefix.size()) != token_) return unauthorized;
    return serveFile(fakeTgUrlDecode(req.path.substr(slash + 1)));
  }

  // /bot<TOKEN>/<method>
  if (req.path.rfind("/bot", 0) != 0) return notFound;
  auto slash = req.path.find('/', 4);
  if (slash == std::string::npos) return notFound;
  if (revoked || req.path.substr(4, slash - 4) != token_) return unauthorized;
  static const std::vector<std::string> methods = {
      "getMe",         "getUpdates",          "sendMessage",    "editMessageText", "editMessageReplyMarkup",
      "deleteMessage", "answerCallbackQuery", "sendChatAction", "getFile",         "deleteWebhook",
      "getWebhookInfo", "setMyCommands"};
  const std::string asked = fakeTgLower(req.path.substr(slash + 1));  // methods are case-insensitive
  auto known = std::find_if(methods.begin(), methods.end(), [&](const std::string& m) { return fakeTgLower(m) == asked; });
  if (known == methods.end()) return notFound;

  Call call;
  call.method = *known;
  call.time = std::chrono::steady_clock::now();
  call.params = json::object();
  for (const auto& [k, v] : fakeTgUrlEncodedPairs(req.query)) call.params[k] = fakeTgNormalize(k, v);
  if (!req.query.empty()) call.encoding = "query";
  auto ctIt = req.headers.find("content-type");
  std::string contentType = ctIt == req.headers.end() ? "" : fakeTgLower(ctIt->second.substr(0, ctIt->second.find(';')));
  contentType.erase(contentType.find_last_not_of(" \t") + 1);
  if (contentType == "application/json" && !req.body.empty()) {
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object())
      return jsonResponse(400, fakeTgErrorBody(400, "Bad Request: can't parse JSON object"));
    for (auto& [k, v] : body.items()) call.params[k] = fakeTgNormalize(k, v);
    call.encoding = "json";
  } else if (!req.body.empty() && (contentType.empty() || contentType == "application/x-www-form-urlencoded")) {
    for (const auto& [k, v] : fakeTgUrlEncodedPairs(req.body)) call.params[k] = fakeTgNormalize(k, v);
    call.encoding = "form";
  } else if (!req.body.empty()) {
    return jsonResponse(400, fakeTgErrorBody(400, "Bad Request: unsupported Content-Type " + contentType));
  }

  // Scripted behaviour first: a drop, then a queued failure.
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto drop = drops_.find(call.method);
    if (drop != drops_.end() && drop->second > 0) {
      --drop->second;
      call.status = 0;
      recordLocked(call);
      return std::nullopt;
    }
    auto fail = failures_.find(call.method);
    if (fail != failures_.end() && !fail->second.empty()) {
      Failure f = std::move(fail->second.front());
      fail->second.pop_front();
      Response r = jsonResponse(f.status, fakeTgErrorBody(f.status, f.description, f.retryAfter));
      if (f.retryAfter) r.headers.emplace_back("Retry-After", std::to_string(*f.retryAfter));
      call.status = f.status;
      recordLocked(call);
      return r;
    }
  }
  return dispatch(call, fd);
}

FakeBotApi::Response FakeBotApi::dispatch(Call& call, int fd) {
  Response r;
  try {
    const json& p = call.params;
    const std::string& m = call.method;
    if (m == "getUpdates") return getUpdates(call, fd);  // records the call itself
    if (m == "getMe") {
      json me = fakeTgUserJson(bot_, true);
      me["can_join_groups"] = true;
      me["can_read_all_group_messages"] = false;
      me["supports_inline_queries"] = false;
      r.body = fakeTgOkBody(me);
    } else if (m == "sendMessage") {
      r = sendMessage(p);
    } else if (m == "editMessageText") {
      r = editMessageText(p);
    } else if (m == "editMessageReplyMarkup") {
      r = editMessageReplyMarkup(p);
    } else if (m == "deleteMessage") {
      r = deleteMessage(p);
    } else if (m == "answerCallbackQuery") {
      r = answerCallbackQuery(p);
    } else if (m == "sendChatAction") {
      r = sendChatAction(p);
    } else if (m == "getFile") {
      r = getFile(p);
    } else if (m == "deleteWebhook") {
      r = deleteWebhook(p);
    } else if (m == "getWebhookInfo") {
      std::lock_guard<std::mutex> lock(mu_);
      json info = {{"url", ""}, {"has_custom_certificate", false}, {"pending_update_count", updates_.size()}};
      r.body = fakeTgOkBody(info);
    } else {  // setMyCommands: accepted, nothing kept beyond the call
      r.body = fakeTgOkBody(true);
    }
  } catch (const FakeTgBadRequest& e) {
    r.status = 400;
    r.body = fakeTgErrorBody(400, e.what());
  }
  std::lock_guard<std::mutex> lock(mu_);
  call.status = r.status;
  recordLocked(call);
  return r;
}

FakeBotApi::Response FakeBotApi::serveFile(const std::string& filePath) {
  Response r;
  std::lock_guard<std::mutex> lock(mu_);
  auto path = fileIdByPath_.find(filePath);
  if (path == fileIdByPath_.end()) {
    r.status = 404;
    r.body = fakeTgErrorBody(404, "Not Found");
    return r;
  }
  r.contentType = "application/octet-stream";
  r.body = filesById_.at(path->second).bytes;
  return r;
}

// ---- methods --------------------------------------------------------------------------

FakeBotApi::Response FakeBotApi::getUpdates(Call& call, int fd) {
  Response r;
  const json& p = call.params;
  std::optional<int64_t> offset, limitParam, timeoutParam;
  try {
    offset = fakeTgInt(p, "offset");
    limitParam = fakeTgInt(p, "limit");
    timeoutParam = fakeTgInt(p, "timeout");
  } catch (const FakeTgBadRequest& e) {
    r.status = 400;
    r.body = fakeTgErrorBody(400, e.what());
    std::lock_guard<std::mutex> lock(mu_);
    call.status = 400;
    recordLocked(call);
    return r;
  }
  const int64_t limit = std::clamp<int64_t>(limitParam.value_or(100), 1, 100);
  const int64_t timeout = std::max<int64_t>(timeoutParam.value_or(0), 0);

  std::unique_lock<std::mutex> lock(mu_);
  if (activePolls_ > 0 && pollFd_ >= 0 && fakeTgPeerGone(pollFd_)) {
    // The held poll's client has left (its fd stays open until that poll ends): end it
    // now rather than answer a reconnecting client with 409.
    pollKicked_ = true;
    changed_.notify_all();
    changed_.wait_for(lock, std::chrono::seconds(2), [this] { return activePolls_ == 0; });
  }
  if (activePolls_ > 0) {  // the real server allows one getUpdates per bot at a time
    r.status = 409;
    r.body = fakeTgErrorBody(409, "Conflict: terminated by other getUpdates request; make sure that only one bot "
                                  "instance is running");
    call.status = 409;
    recordLocked(call);
    return r;
  }
  ++activePolls_;
  pollFd_ = fd;
  pollKicked_ = false;
  const std::size_t index = recordLocked(call);  // visible while held; the status comes at the end
  if (p.contains("allowed_updates") && p["allowed_updates"].is_array()) allowedUpdates_ = p["allowed_updates"];
  int64_t from = 0;
  if (offset && *offset < 0) {
    // -N: only the last N updates, everything before them forgotten.
    while (static_cast<int64_t>(updates_.size()) > -*offset) updates_.erase(updates_.begin());
  } else if (offset) {
    confirmLocked(*offset);
    from = *offset;
  }
  pruneDisallowedLocked();

  // Held until an update is ready, the timeout passes, the client leaves, or shutdown.
  // The wait is sliced only to notice a vanished client.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  while (!stop_ && !pollKicked_ && !updateReadyLocked(from) && std::chrono::steady_clock::now() < deadline) {
    changed_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100)));
    pruneDisallowedLocked();
    if (fakeTgPeerGone(fd)) break;
  }

  json result = json::array();
  for (auto it = updates_.lower_bound(from); it != updates_.end() && static_cast<int64_t>(result.size()) < limit; ++it)
    result.push_back(it->second);
  --activePolls_;
  pollFd_ = -1;
  calls_[index].status = 200;
  changed_.notify_all();
  r.body = fakeTgOkBody(result);
  return r;
}

FakeBotApi::Response FakeBotApi::sendMessage(const json& p) {
  const int64_t chatId = fakeTgChatId(p);
  FakeTgParsed text = fakeTgCheckText(p);
  std::optional<json> markup = fakeTgCheckMarkup(p);
  std::optional<int64_t> replyTo = fakeTgInt(p, "reply_to_message_id");
  bool allowWithoutReply = fakeTgBool(p, "allow_sending_without_reply");
  if (p.contains("reply_parameters") && !p["reply_parameters"].is_null()) {
    const json& rp = p["reply_parameters"];
    if (!rp.is_object() || !rp.contains("message_id") || !rp["message_id"].is_number_integer())
      fakeTgFail("can't parse reply parameters JSON object");
    replyTo = rp["message_id"].get<int64_t>();
    allowWithoutReply = allowWithoutReply || (rp.contains("allow_sending_without_reply") &&
                                              rp["allow_sending_without_reply"].is_boolean() &&
                                              rp["allow_sending_without_reply"].get<bool>());
  }

  std::lock_guard<std::mutex> lock(mu_);
  std::optional<json> replied;
  if (replyTo) {
    if (StoredMessage* m = findMessageLocked(chatId, *replyTo)) {
      replied = m->message;
      replied->erase("reply_to_message");  // nested one level only, as the real API does
    } else if (!allowWithoutReply) {
      fakeTgFail("message to be replied not found");
    }
  }
  json msg = {{"message_id", nextMessageIdLocked(chatId)},
              {"from", fakeTgUserJson(bot_, true)},
              {"chat", chatJsonLocked(chatId)},
              {"date", fakeTgNow()},
              {"text", text.text}};
  if (!text.entities.empty()) msg["entities"] = text.entities;
  if (markup) msg["reply_markup"] = *markup;
  if (replied) msg["reply_to_message"] = *replied;
  if (p.contains("link_preview_options") && p["link_preview_options"].is_object())
    msg["link_preview_options"] = p["link_preview_options"];
  messages_[chatId][msg["message_id"].get<int64_t>()] = StoredMessage{msg, true};
  changed_.notify_all();
  Response r;
  r.body = fakeTgOkBody(msg);
  return r;
}

FakeBotApi::Response FakeBotApi::editMessageText(const json& p) {
  if (p.contains("inline_message_id")) fakeTgFail("message to edit not found");  // no inline mode here
  const int64_t chatId = fakeTgChatId(p);
  auto messageId = fakeTgInt(p, "message_id");
  if (!messageId) fakeTgFail("message identifier is not specified");
  FakeTgParsed text = fakeTgCheckText(p);
  std::optional<json> markup = fakeTgCheckMarkup(p);

  std::lock_guard<std::mutex> lock(mu_);
  StoredMessage* stored = findMessageLocked(chatId, *messageId);
  if (!stored) fakeTgFail("message to edit not found");
  if (!stored->fromBot) fakeTgFail("message can't be edited");
  json& msg = stored->message;
  const json oldEntities = msg.value("entities", json::array());
  const std::optional<json> oldMarkup =
      msg.contains("reply_markup") ? std::optional<json>(msg["reply_markup"]) : std::nullopt;
  if (msg.value("text", "") == text.text && oldEntities == text.entities && oldMarkup == markup)
    fakeTgFail("message is not modified: specified new message content and reply markup are exactly the same as "
               "a current content and reply markup of the message");
  msg["text"] = text.text;
  if (text.entities.empty()) {
    msg.erase("entities");
  } else {
    msg["entities"] = text.entities;
  }
  // An edit without reply_markup removes the keyboard, as on the real server.
  if (markup) {
    msg["reply_markup"] = *markup;
  } else {
    msg.erase("reply_markup");
  }
  msg["edit_date"] = fakeTgNow();
  changed_.notify_all();
  Response r;
  r.body = fakeTgOkBody(msg);
  return r;
}

FakeBotApi::Response FakeBotApi::editMessageReplyMarkup(const json& p) {
  if (p.contains("inline_message_id")) fakeTgFail("message to edit not found");
  const int64_t chatId = fakeTgChatId(p);
  auto messageId = fakeTgInt(p, "message_id");
  if (!messageId) fakeTgFail("message identifier is not specified");
  std::optional<json> markup = fakeTgCheckMarkup(p);

  std::lock_guard<std::mutex> lock(mu_);
  StoredMessage* stored = findMessageLocked(chatId, *messageId);
  if (!stored) fakeTgFail("message to edit not found");
  if (!stored->fromBot) fakeTgFail("message can't be edited");
  json& msg = stored->message;
  const std::optional<json> oldMarkup =
      msg.contains("reply_markup") ? std::optional<json>(msg["reply_markup"]) : std::nullopt;
  if (oldMarkup == markup)
    fakeTgFail("message is not modified: specified new message content and reply markup are exactly the same as "
               "a current content and reply markup of the message");
  if (markup) {
    msg["reply_markup"] = *markup;
  } else {
    msg.erase("reply_markup");
  }
  msg["edit_date"] = fakeTgNow();
  changed_.notify_all();
  Response r;
  r.body = fakeTgOkBody(msg);
  return r;
}

FakeBotApi::Response FakeBotApi::deleteMessage(const json& p) {
  const int64_t chatId = fakeTgChatId(p);
  auto messageId = fakeTgInt(p, "message_id");
  if (!messageId) fakeTgFail("message identifier is not specified");
  std::lock_guard<std::mutex> lock(mu_);
  if (!findMessageLocked(chatId, *messageId)) fakeTgFail("message to delete not found");
  messages_[chatId].erase(*messageId);
  changed_.notify_all();
  Response r;
  r.body = fakeTgOkBody(true);
  return r;
}

FakeBotApi::Response FakeBotApi::answerCallbackQuery(const json& p) {
  const std::string id = fakeTgString(p, "callback_query_id");
  std::lock_guard<std::mutex> lock(mu_);
  // Unknown and already answered look the same on the real server.
  if (openQueries_.erase(id) == 0) fakeTgFail("query is too old and response timeout expired or query ID is invalid");
  Response r;
  r.body = fakeTgOkBody(true);
  return r;
}

FakeBotApi::Response FakeBotApi::sendChatAction(const json& p) {
  fakeTgChatId(p);
  static const std::set<std::string> actions = {"typing",          "upload_photo", "record_video", "upload_video",
                                                "record_voice",    "upload_voice", "upload_document",
                                                "choose_sticker",  "find_location", "record_video_note",
                                                "upload_video_note"};
  if (!actions.count(fakeTgString(p, "action"))) fakeTgFail("wrong parameter action in request");
  Response r;
  r.body = fakeTgOkBody(true);
  return r;
}

FakeBotApi::Response FakeBotApi::getFile(const json& p) {
  const std::string id = fakeTgString(p, "file_id");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = filesById_.find(id);
  if (it == filesById_.end()) fakeTgFail("invalid file_id");
  const File& f = it->second;
  if (f.bytes.size() > kFakeTgMaxDownload) fakeTgFail("file is too big");
  json file = {{"file_id", f.fileId}, {"file_unique_id", f.fileUniqueId}, {"file_size", f.bytes.size()},
               {"file_path", f.filePath}};
  Response r;
  r.body = fakeTgOkBody(file);
  return r;
}

FakeBotApi::Response FakeBotApi::deleteWebhook(const json& p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fakeTgBool(p, "drop_pending_updates")) updates_.clear();
  changed_.notify_all();
  Response r;
  r.body = fakeTgOkBody(true);
  return r;
}

// ---- state helpers (under mu_) ------------------------------------------------------------

std::size_t FakeBotApi::recordLocked(const Call& call) {
  calls_.push_back(call);
  changed_.notify_all();
  return calls_.size() - 1;
}

int64_t FakeBotApi::queueUpdateLocked(json update) {
  int64_t id;
  if (update.contains("update_id") && update["update_id"].is_number_integer()) {
    id = update["update_id"].get<int64_t>();
    nextUpdateId_ = std::max(nextUpdateId_, id + 1);
  } else {
    id = nextUpdateId_++;
    update["update_id"] = id;
  }
  updates_[id] = std::move(update);
  changed_.notify_all();
  return id;
}

int64_t FakeBotApi::queueMessageLocked(json message) {
  const int64_t chatId = message["chat"]["id"].get<int64_t>();
  messages_[chatId][message["message_id"].get<int64_t>()] = StoredMessage{message, false};
  return queueUpdateLocked(json{{"message", std::move(message)}});
}

void FakeBotApi::rememberChatLocked(const Chat& chat, const User& peer) {
  auto& info = chats_[chat.id];
  info.chat = chat;
  if (peer.id != 0 || info.peer.id == 0) info.peer = peer;
}

json FakeBotApi::chatJsonLocked(int64_t chatId) const {
  auto it = chats_.find(chatId);
  if (it == chats_.end()) return {{"id", chatId}, {"type", chatId > 0 ? "private" : "group"}};
  const Chat& c = it->second.chat;
  json j = {{"id", c.id}, {"type", c.type}};
  if (c.type == "private") {
    const User& u = it->second.peer;
    j["first_name"] = u.firstName;
    if (!u.lastName.empty()) j["last_name"] = u.lastName;
    if (!u.username.empty()) j["username"] = u.username;
  } else {
    j["title"] = c.title;
  }
  return j;
}

json FakeBotApi::incomingMessageLocked(const User& from, const Chat& chat) {
  rememberChatLocked(chat, chat.type == "private" ? from : User{});
  return {{"message_id", nextMessageIdLocked(chat.id)},
          {"from", fakeTgUserJson(from)},
          {"chat", chatJsonLocked(chat.id)},
          {"date", fakeTgNow()}};
}

int64_t FakeBotApi::nextMessageIdLocked(int64_t chatId) {
  auto [it, fresh] = nextMessageId_.try_emplace(chatId, 1);
  (void)fresh;
  return it->second++;
}

FakeBotApi::File& FakeBotApi::registerFileLocked(std::string bytes, std::string filePath) {
  const int64_t n = nextFileNo_++;
  File f;
  f.fileId = "FAKEtgFileId" + std::to_string(n) + "AgADBAAD";
  f.fileUniqueId = "AQADfake" + std::to_string(n);
  f.filePath = filePath.empty() ? "documents/file_" + std::to_string(n) : std::move(filePath);
  f.bytes = std::move(bytes);
  fileIdByPath_[f.filePath] = f.fileId;
  return filesById_[f.fileId] = std::move(f);
}

bool FakeBotApi::updateReadyLocked(int64_t offset) const { return updates_.lower_bound(offset) != updates_.end(); }

void FakeBotApi::confirmLocked(int64_t offset) {
  if (offset <= 0) return;
  updates_.erase(updates_.begin(), updates_.lower_bound(offset));
  confirmedUpTo_ = std::max(confirmedUpTo_, offset);
}

// Update kinds outside allowed_updates are never delivered (the real server does not even
// create them); with no list, all but chat_member and the reaction kinds.
void FakeBotApi::pruneDisallowedLocked() {
  const bool custom = allowedUpdates_ && !allowedUpdates_->empty();
  for (auto it = updates_.begin(); it != updates_.end();) {
    std::string kind;
    for (auto& [k, v] : it->second.items())
      if (k != "update_id") {
        kind = k;
        break;
      }
    bool allowed = custom ? std::find(allowedUpdates_->begin(), allowedUpdates_->end(), kind) != allowedUpdates_->end()
                          : kind != "chat_member" && kind != "message_reaction" && kind != "message_reaction_count";
    it = allowed ? std::next(it) : updates_.erase(it);
  }
}

FakeBotApi::StoredMessage* FakeBotApi::findMessageLocked(int64_t chatId, int64_t messageId) {
  auto chat = messages_.find(chatId);
  if (chat == messages_.end()) return nullptr;
  auto it = chat->second.find(messageId);
  return it == chat->second.end() ? nullptr : &it->second;
}

// ---- test side: configuration and injection ---------------------------------------------

void FakeBotApi::setTokenRevoked(bool revoked) {
  std::lock_guard<std::mutex> lock(mu_);
  revoked_ = revoked;
}

void FakeBotApi::failNext(std::string method, int status, std::string description, std::optional<int> retryAfter) {
  if (description.empty()) description = fakeTgDefaultDescription(status, retryAfter);
  std::lock_guard<std::mutex> lock(mu_);
  failures_[std::move(method)].push_back(Failure{status, std::move(description), retryAfter});
}

void FakeBotApi::dropNextConnection(std::string method) {
  std::lock_guard<std::mutex> lock(mu_);
  ++drops_[std::move(method)];
}

int64_t FakeBotApi::addTextMessage(const User& from, const Chat& chat, std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  json msg = incomingMessageLocked(from, chat);
  // Clients tell commands by this entity, as the real server sends it.
  if (!text.empty() && text[0] == '/') {
    auto end = std::find_if(text.begin(), text.end(), [](char c) { return fakeTgSpace(c); });
    auto length = fakeTgUtf16Length(std::string(text.begin(), end));
    if (length) msg["entities"] = json::array({{{"type", "bot_command"}, {"offset", 0}, {"length", *length}}});
  }
  msg["text"] = std::move(text);
  return queueMessageLocked(std::move(msg));
}

int64_t FakeBotApi::addForwardedMessage(const User& from, const Chat& chat, std::string text, const User& originalSender) {
  std::lock_guard<std::mutex> lock(mu_);
  json msg = incomingMessageLocked(from, chat);
  const int64_t originalDate = fakeTgNow() - 3600;
  msg["forward_origin"] = {{"type", "user"}, {"date", originalDate}, {"sender_user", fakeTgUserJson(originalSender)}};
  msg["forward_from"] = fakeTgUserJson(originalSender);  // the legacy fields, still sent
  msg["forward_date"] = originalDate;
  msg["text"] = std::move(text);
  return queueMessageLocked(std::move(msg));
}

InjectedCallback FakeBotApi::addCallbackQuery(const User& from, const Chat& chat, int64_t messageId, std::string data) {
  std::lock_guard<std::mutex> lock(mu_);
  rememberChatLocked(chat, chat.type == "private" ? from : User{});
  const std::string queryId = std::to_string(4000000000000000000LL + nextQueryId_++);
  openQueries_.insert(queryId);
  json message;
  if (StoredMessage* m = findMessageLocked(chat.id, messageId)) {
    message = m->message;
  } else {
    // The real shape of a message the bot can no longer see: InaccessibleMessage.
    message = {{"chat", chatJsonLocked(chat.id)}, {"message_id", messageId}, {"date", 0}};
  }
  json query = {{"id", queryId},
                {"from", fakeTgUserJson(from)},
                {"message", std::move(message)},
                {"chat_instance", std::to_string(chat.id * 31 + 7)},
                {"data", std::move(data)}};
  return InjectedCallback{queueUpdateLocked(json{{"callback_query", std::move(query)}}), queryId};
}

int64_t FakeBotApi::addPhoto(const User& from, const Chat& chat, std::string caption, std::string bytes, int width,
                             int height) {
  std::lock_guard<std::mutex> lock(mu_);
  json msg = incomingMessageLocked(from, chat);
  const int longest = std::max({width, height, 1});
  const int thumbW = std::max(1, width * 90 / longest), thumbH = std::max(1, height * 90 / longest);
  std::string thumbBytes = bytes.substr(0, std::min<std::size_t>(bytes.size(), 4096));
  auto photoSize = [](const File& f, int w, int h) {
    return json{{"file_id", f.fileId}, {"file_unique_id", f.fileUniqueId}, {"file_size", f.bytes.size()},
                {"width", w}, {"height", h}};
  };
  auto path = [this] { return "photos/file_" + std::to_string(nextFileNo_) + ".jpg"; };
  json thumb = photoSize(registerFileLocked(std::move(thumbBytes), path()), thumbW, thumbH);
  json full = photoSize(registerFileLocked(std::move(bytes), path()), width, height);
  msg["photo"] = json::array({std::move(thumb), std::move(full)});
  if (!caption.empty()) msg["caption"] = std::move(caption);
  return queueMessageLocked(std::move(msg));
}

int64_t FakeBotApi::addDocument(const User& from, const Chat& chat, std::string caption, std::string fileName,
                                std::string mimeType, std::string bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  json msg = incomingMessageLocked(from, chat);
  const File& f = registerFileLocked(std::move(bytes), "documents/file_" + std::to_string(nextFileNo_) +
                                                           fakeTgExtension(fileName));
  msg["document"] = {{"file_name", std::move(fileName)}, {"mime_type", std::move(mimeType)}, {"file_id", f.fileId},
                     {"file_unique_id", f.fileUniqueId}, {"file_size", f.bytes.size()}};
  if (!caption.empty()) msg["caption"] = std::move(caption);
  return queueMessageLocked(std::move(msg));
}

int64_t FakeBotApi::addVoice(const User& from, const Chat& chat, std::string bytes, int duration) {
  std::lock_guard<std::mutex> lock(mu_);
  json msg = incomingMessageLocked(from, chat);
  const File& f = registerFileLocked(std::move(bytes), "voice/file_" + std::to_string(nextFileNo_) + ".oga");
  msg["voice"] = {{"duration", duration}, {"mime_type", "audio/ogg"}, {"file_id", f.fileId},
                  {"file_unique_id", f.fileUniqueId}, {"file_size", f.bytes.size()}};
  return queueMessageLocked(std::move(msg));
}

int64_t FakeBotApi::addUpdate(json rawUpdate) {
  if (!rawUpdate.is_object()) throw std::invalid_argument("FakeBotApi::addUpdate: an Update is a JSON object");
  std::lock_guard<std::mutex> lock(mu_);
  return queueUpdateLocked(std::move(rawUpdate));
}

std::string FakeBotApi::addFile(std::string bytes, std::string filePath) {
  std::lock_guard<std::mutex> lock(mu_);
  return registerFileLocked(std::move(bytes), std::move(filePath)).fileId;
}

void FakeBotApi::addChat(const Chat& chat, const User& privatePeer) {
  std::lock_guard<std::mutex> lock(mu_);
  rememberChatLocked(chat, privatePeer);
}

// ---- test side: observation ---------------------------------------------------------------

std::vector<Call> FakeBotApi::calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

std::vector<Call> FakeBotApi::callsOf(const std::string& method) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Call> out;
  for (const auto& c : calls_)
    if (c.method == method) out.push_back(c);
  return out;
}

std::vector<json> FakeBotApi::sent(int64_t chatId) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<json> out;
  auto chat = messages_.find(chatId);
  if (chat == messages_.end()) return out;
  for (const auto& [id, m] : chat->second)
    if (m.fromBot) out.push_back(m.message);
  return out;
}

bool FakeBotApi::waitForCall(const std::string& method, std::function<bool(const json& params)> pred,
                             std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, timeout, [&] {
    return std::any_of(calls_.begin(), calls_.end(),
                       [&](const Call& c) { return c.method == method && (!pred || pred(c.params)); });
  });
}

std::optional<json> FakeBotApi::waitForMessage(int64_t chatId, std::function<bool(const json& msg)> pred,
                                               std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  std::optional<json> found;
  changed_.wait_for(lock, timeout, [&] {
    auto chat = messages_.find(chatId);
    if (chat == messages_.end()) return false;
    for (const auto& [id, m] : chat->second)
      if (m.fromBot && (!pred || pred(m.message))) {
        found = m.message;
        return true;
      }
    return false;
  });
  return found;
}

int64_t FakeBotApi::pendingUpdates() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(updates_.size());
}

int64_t FakeBotApi::confirmedUpTo() const {
  std::lock_guard<std::mutex> lock(mu_);
  return confirmedUpTo_;
}

int FakeBotApi::activePolls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return activePolls_;
}

std::optional<json> FakeBotApi::allowedUpdates() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allowedUpdates_;
}

}  // namespace pine::telegram::test
