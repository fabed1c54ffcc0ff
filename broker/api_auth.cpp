#include "broker/api_auth.h"

#include <strings.h>

#include <openssl/crypto.h>

#include <algorithm>
#include <string_view>

namespace pine {

bool tokenEquals(const std::string& a, const std::string& b) {
  if (a.empty() || a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

static std::string lower(std::string s) {
  for (auto& c : s) c = (char)tolower((unsigned char)c);
  return s;
}

static bool queryCarriesToken(const std::string& query) {
  // Tokens in URLs end up in logs and histories: refuse them outright.
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t end = query.find('&', pos);
    std::string item = query.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    std::string key = lower(percentDecode(item.substr(0, item.find('=')), true).value_or(""));
    if (key == "token" || key == "access_token" || key == "auth" || key == "authorization" || key == "bearer")
      return true;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return false;
}

std::optional<ApiRefusal> checkApiRequest(const ApiRequestFacts& req, const std::string& token) {
  // A browser page must not drive the daemon, not even /health.
  if (req.hasOrigin || req.hasSecFetchSite)
    return ApiRefusal{403, "requests from web pages are refused (Origin or Sec-Fetch-Site present)"};
  if (queryCarriesToken(req.query))
    return ApiRefusal{400, "send the token in the Authorization header, never in the URL"};
  if (req.method == "GET" && req.path == "/health") return std::nullopt;
  // The scheme's name in any case (RFC 9110 11.1: "bearer" is "Bearer"); the token exactly, less
  // the whitespace around a field's value, which is not part of it (RFC 9110 5.5).
  const std::string prefix = "Bearer ";
  std::string_view value = req.authorization;
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.size() <= prefix.size() || lower(std::string(value.substr(0, prefix.size()))) != "bearer ")
    return ApiRefusal{401, "missing bearer token (Authorization: Bearer <data/http-token>)"};
  if (!tokenEquals(std::string(value.substr(prefix.size())), token)) return ApiRefusal{401, "wrong token"};
  return std::nullopt;
}

std::optional<ApiRefusal> checkHost(const std::optional<std::string>& host, ApiListener listener, int port) {
  if (!host) return ApiRefusal{403, "no Host header: send Host: localhost" +
                                        (listener == ApiListener::Tcp ? ":" + std::to_string(port) : std::string())};
  std::string h = lower(*host);
  // A field's value is without the white space after it (RFC 9110 5.5); kj-http keeps it.
  while (!h.empty() && (h.back() == ' ' || h.back() == '\t')) h.pop_back();
  if (listener == ApiListener::Unix) {
    // pinectl sends "localhost"; a port means nothing on a unix socket, so any is taken.
    if (h == "localhost") return std::nullopt;
    if (h.rfind("localhost:", 0) == 0 && h.size() > 10 && h.find_first_not_of("0123456789", 10) == std::string::npos)
      return std::nullopt;
    return ApiRefusal{403, "unexpected Host on the unix socket: send Host: localhost"};
  }
  // The bound port must be named: a page on evil.example:PORT rebound to 127.0.0.1 sends its own name.
  std::string p = ":" + std::to_string(port);
  if (h == "127.0.0.1" + p || h == "localhost" + p) return std::nullopt;
  return ApiRefusal{403, "unexpected Host: send Host: 127.0.0.1" + p + " or localhost" + p};
}

static bool isHex(char c) { return isxdigit((unsigned char)c) != 0; }

std::optional<std::string> percentDecode(const std::string& s, bool plusIsSpace) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '%') {
      if (i + 2 >= s.size() || !isHex(s[i + 1]) || !isHex(s[i + 2])) return std::nullopt;
      out += (char)std::stoi(s.substr(i + 1, 2), nullptr, 16);
      i += 2;
    } else if (s[i] == '+' && plusIsSpace) {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

std::optional<ApiRefusal> checkPath(const std::string& rawPath) {
  auto bad = [](const std::string& why) {
    return ApiRefusal{400, "malformed path: " + why + " (write the route as docs/api.md shows it)"};
  };
  if (rawPath.empty() || rawPath[0] != '/') return bad("it must start with '/'");
  if (rawPath.size() > 2048) return bad("longer than 2048 bytes");
  for (unsigned char c : rawPath)
    if (c < 0x21 || c >= 0x7f) return bad("control, space or non-ASCII bytes must be percent-encoded");
  if (rawPath == "/") return std::nullopt;
  size_t pos = 1;
  while (pos <= rawPath.size()) {
    size_t end = rawPath.find('/', pos);
    std::string seg = rawPath.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (seg.empty()) return bad("empty segment ('//' or a trailing '/')");
    auto decoded = percentDecode(seg, false);
    if (!decoded) return bad("broken %-escape");
    if (*decoded == "." || *decoded == "..") return bad("'.' and '..' segments are not resolved");
    for (unsigned char c : *decoded)
      if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) return bad("encoded '/', '\\' or control byte in a segment");
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return std::nullopt;
}

std::optional<ApiRefusal> checkBodyFraming(const std::optional<std::string>& contentLength,
                                           const std::optional<std::string>& transferEncoding, uint64_t limit,
                                           std::optional<uint64_t>* declared) {
  *declared = std::nullopt;
  if (contentLength && transferEncoding)
    // Request smuggling lives where two parsers disagree on which one wins: accept neither.
    return ApiRefusal{400, "Content-Length and Transfer-Encoding together: send one of them"};
  if (transferEncoding) {
    if (lower(*transferEncoding) != "chunked")
      return ApiRefusal{400, "Transfer-Encoding '" + *transferEncoding + "' is not supported: send chunked or a Content-Length"};
    return std::nullopt;
  }
  if (!contentLength) {
    *declared = 0;
    return std::nullopt;
  }
  const std::string& cl = *contentLength;
  // One value, digits only: "5, 5" (a repeated header) and "5, 6" are both refused.
  if (cl.empty() || cl.size() > 19 || cl.find_first_not_of("0123456789") != std::string::npos)
    return ApiRefusal{400, "Content-Length must be one decimal number, sent once"};
  uint64_t n = std::stoull(cl);
  if (n > limit)
    return ApiRefusal{413, "the body is larger than " +
                               (limit >= (1u << 20) ? std::to_string(limit >> 20) + " MB" : std::to_string(limit) + " bytes")};
  *declared = n;
  return std::nullopt;
}

std::optional<ApiRefusal> checkContentType(const std::optional<std::string>& contentType, bool hasBody) {
  if (!hasBody || !contentType) return std::nullopt;
  std::string type = lower(contentType->substr(0, contentType->find(';')));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  size_t slash = type.find('/');
  bool json = type == "application/json" ||
              (slash != std::string::npos && slash > 0 && type.size() > slash + 6 &&
               type.compare(type.size() - 5, 5, "+json") == 0 && type.find_first_of(" \t,") == std::string::npos);
  if (json) return std::nullopt;
  return ApiRefusal{415, "the body is '" + contentType->substr(0, 100) +
                             "', not JSON: send Content-Type: application/json (or none)"};
}

// ---- RequestFraming ----------------------------------------------------------------------------

namespace {
bool isTchar(char c) {
  return isalnum((unsigned char)c) || (c != 0 && std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos);
}
bool isCtl(char c) { return (unsigned char)c < 0x20 || c == 0x7f; }
int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
bool equalsLower(const std::string& s, const char* want) {
  size_t i = 0;
  for (; want[i] != 0; i++)
    if (i >= s.size() || tolower((unsigned char)s[i]) != want[i]) return false;
  return i == s.size();
}
constexpr size_t kMaxMethod = 20, kMaxChunkLine = 32;
}  // namespace

bool RequestFraming::refuse(int status, std::string message, bool inBody) {
  refusal_ = FramingRefusal{status, std::move(message), inBody};
  state_ = State::Closed;
  line_.clear();
  line_.shrink_to_fit();
  return false;
}

size_t RequestFraming::scan(const char* data, size_t size) {
  size_t i = 0;
  while (i < size && !refusal_) {
    char c = data[i];
    bool ok = true;
    switch (state_) {
      case State::RequestLine:
        if (betweenRequests()) {
          if (fullAt(passed_ + i)) return passed(i);
          requestStart_ = passed_ + i;
        }
        ok = requestLineByte(c);
        break;
      case State::HeaderLine:
        if (!line_.empty() && !cr_) {
          // The middle of a line: take the run of ordinary bytes at once, as far as the limits allow
          // (the byte that would go over is left to headerLineByte, which refuses it).
          size_t room = std::min(limits_.maxHeaderLine - line_.size(), limits_.maxHead - headBytes_), j = i;
          while (j < size && j - i < room && (data[j] == '\t' || !isCtl(data[j]))) j++;
          if (j > i) {
            line_.append(data + i, j - i);
            headBytes_ += j - i;
            i = j;
            continue;
          }
        }
        ok = headerLineByte(c);
        break;
      case State::FixedBody:
      case State::ChunkData: {
        // Body bytes are not looked at: skip them all at once.
        uint64_t n = std::min<uint64_t>(remaining_, size - i);
        remaining_ -= n;
        i += n;
        if (remaining_ == 0) {
          if (state_ == State::FixedBody) endOfRequest();
          else state_ = State::ChunkDataEnd;
        }
        continue;
      }
      case State::ChunkSize: ok = chunkSizeByte(c); break;
      case State::ChunkDataEnd:
      case State::LastChunkEnd:
        if (c == '\r' && !cr_) {
          cr_ = true;
        } else if (c == '\n') {
          cr_ = false;
          if (state_ == State::ChunkDataEnd) state_ = State::ChunkSize;
          else endOfRequest();
        } else if (state_ == State::ChunkDataEnd) {
          ok = refuse(400, "a chunk's data must be followed by CRLF (Transfer-Encoding: chunked)", true);
        } else {
          ok = refuse(400, "trailer fields after the last chunk are not supported: end the body with 0 CRLF CRLF", false);
          refusal_->trailer = true;
        }
        break;
      case State::Ended:
        return passed(i);  // after a request that asked to close: not passed on, and not refused
      case State::Closed:
        ok = refuse(400, "the body's framing (Content-Length, Transfer-Encoding) was refused: nothing more is read "
                         "on this connection",
                    true);
        break;
    }
    if (!ok) break;
    i++;
  }
  return passed(i);
}

bool RequestFraming::requestLineByte(char c) {
  if (++headBytes_ > limits_.maxHead)
    return refuse(431, "request head larger than " + std::to_string(limits_.maxHead) + " bytes", false);
  if (cr_ && c != '\n') return refuse(400, "a CR not followed by LF in the request line", false);
  if (c == '\r') {
    cr_ = true;
    return true;
  }
  if (c == '\n') {
    cr_ = false;
    return endOfRequestLine();
  }
  if (c == ' ') {
    if (line_.empty()) return refuse(400, "the request line must be METHOD SP TARGET SP HTTP/1.1", false);
    if (++spaces_ > 2 || line_.back() == ' ')
      return refuse(400, "the request line must be METHOD SP TARGET SP HTTP/1.1 (one space each)", false);
    partStart_ = line_.size() + 1;
  } else if (isCtl(c) || (unsigned char)c >= 0x80) {
    return refuse(400, "control or non-ASCII byte in the request line: percent-encode the target", false);
  } else if (spaces_ == 0) {
    if (!isTchar(c) || line_.size() >= kMaxMethod) return refuse(400, "the request line must start with a method", false);
  } else if (spaces_ == 1) {
    if (line_.size() + 1 - partStart_ > limits_.maxTarget)
      return refuse(414, "request target longer than " + std::to_string(limits_.maxTarget) + " bytes", false);
  } else if (line_.size() + 1 - partStart_ > 8) {
    return refuse(400, "the request line must end in HTTP/1.1", false);
  }
  line_ += c;
  return true;
}

bool RequestFraming::endOfRequestLine() {
  if (line_.empty()) return refuse(400, "empty request line: send METHOD SP TARGET SP HTTP/1.1", false);
  if (spaces_ != 2 || line_.back() == ' ')
    return refuse(400, "the request line must be METHOD SP TARGET SP HTTP/1.1", false);
  size_t versionAt = line_.rfind(' ') + 1;
  std::string version = line_.substr(versionAt);
  if (version != "HTTP/1.1" && version != "HTTP/1.0")
    return refuse(400, "the request line must end in HTTP/1.1 (or HTTP/1.0)", false);
  versions_.push_back({version == "HTTP/1.0", requestStart_});
  line_.clear();
  spaces_ = 0;
  state_ = State::HeaderLine;
  return true;
}

bool RequestFraming::headerLineByte(char c) {
  if (++headBytes_ > limits_.maxHead)
    return refuse(431, "request head larger than " + std::to_string(limits_.maxHead) + " bytes", false);
  if (cr_ && c != '\n') return refuse(400, "control byte (a CR not followed by LF) in a header line", false);
  if (c == '\r') {
    cr_ = true;
    return true;
  }
  if (c == '\n') {
    cr_ = false;
    return endOfHeaderLine();
  }
  if (line_.empty()) {
    if (c == ' ' || c == '\t') return refuse(400, "a folded header line (starting with a space) is not accepted", false);
    if (++headerLines_ > limits_.maxHeaderLines)
      return refuse(431, "more than " + std::to_string(limits_.maxHeaderLines) + " header lines", false);
  }
  if (isCtl(c) && c != '\t') return refuse(400, "control byte in a header line", false);
  if (line_.size() >= limits_.maxHeaderLine)
    return refuse(431, "a header line longer than " + std::to_string(limits_.maxHeaderLine) + " bytes", false);
  line_ += c;
  return true;
}

bool RequestFraming::endOfHeaderLine() {
  if (line_.empty()) {
    // HTTP/1.0 has no transfer codings: RFC 9112 6.1 calls such framing faulty (400, then close).
    if (transferEncodings_ > 0 && !versions_.empty() && versions_.back().http10)
      return refuse(400, "Transfer-Encoding in an HTTP/1.0 request: send HTTP/1.1, or a Content-Length", false);
    endOfHead();
    return true;
  }
  size_t colon = 0;
  while (colon < line_.size() && isTchar(line_[colon])) colon++;
  if (colon == 0 || colon >= line_.size() || line_[colon] != ':')
    return refuse(400, "a header line must be Name: value (no space before the colon)", false);
  // The value as kj-http reads it: leading spaces skipped, the rest as sent.
  size_t v = colon + 1;
  while (v < line_.size() && (line_[v] == ' ' || line_[v] == '\t')) v++;
  std::string name = line_.substr(0, colon);
  // kj-http drops a field whose value is empty, so the checks after it would not see these.
  size_t last = line_.find_last_not_of(" \t");
  const bool empty = last == std::string::npos || last < v;
  if (empty && equalsLower(name, "content-length"))
    return refuse(400, "Content-Length must be one decimal number, sent once", false);
  if (empty && equalsLower(name, "transfer-encoding"))
    return refuse(400, "an empty Transfer-Encoding: send chunked, or a Content-Length", false);
  // kj-http joins a repeated Authorization or Content-Type into one "a, b": which copy the sender
  // meant would be a guess (a webhook's delivery is refused for it, docs/api.md).
  if (equalsLower(name, "authorization") && ++authorizations_ > 1)
    return refuse(400, "Authorization given twice: send it once", false);
  if (equalsLower(name, "content-type") && ++contentTypes_ > 1)
    return refuse(400, "Content-Type given twice: send it once", false);
  if (empty && (equalsLower(name, "origin") || equalsLower(name, "sec-fetch-site")))
    return refuse(403, "requests from web pages are refused (Origin or Sec-Fetch-Site present)", false);
  if (equalsLower(name, "connection")) {  // each line of it: kj-http joins them into one list
    std::string_view items = std::string_view(line_).substr(v);
    askedClose_ |= connectionListHas(items, "close");
    askedKeepAlive_ |= connectionListHas(items, "keep-alive");
  }
  if (equalsLower(name, "content-length")) {
    contentLengths_++;
    contentLength_ = line_.substr(v);
  } else if (equalsLower(name, "transfer-encoding")) {
    transferEncodings_++;
    transferEncoding_ = line_.substr(v);
  }
  line_.clear();
  return true;
}

bool connectionListHas(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (item.size() == token.size() && strncasecmp(item.data(), token.data(), token.size()) == 0) return true;
  }
  return false;
}

void RequestFraming::endOfRequest() { state_ = closing_ ? State::Ended : State::RequestLine; }

void RequestFraming::endOfHead() {
  heads_++;
  // As ConnectionService decides it: HTTP/1.0 closes unless it asks to be kept, 1.1 when it asks.
  closing_ = !versions_.empty() && versions_.back().http10 ? !askedKeepAlive_ : askedClose_;
  askedClose_ = askedKeepAlive_ = false;
  state_ = State::RequestLine;
  if (transferEncodings_ > 0) {
    state_ = transferEncodings_ == 1 && contentLengths_ == 0 && equalsLower(transferEncoding_, "chunked")
                 ? State::ChunkSize
                 : State::Closed;
  } else if (contentLengths_ > 0) {
    const std::string& cl = contentLength_;
    if (contentLengths_ == 1 && !cl.empty() && cl.size() <= 19 && cl.find_first_not_of("0123456789") == std::string::npos) {
      remaining_ = std::stoull(cl);
      if (remaining_ > 0) state_ = State::FixedBody;
    } else {
      state_ = State::Closed;
    }
  }
  headBytes_ = headerLines_ = 0;
  contentLengths_ = transferEncodings_ = authorizations_ = contentTypes_ = 0;
  contentLength_.clear();
  transferEncoding_.clear();
  line_.clear();
  if (line_.capacity() > 1024) line_.shrink_to_fit();  // a long line's buffer goes with its head
  chunkSize_ = 0;
  chunkDigits_ = 0;
  if (state_ == State::RequestLine) endOfRequest();  // no body: the request has ended
}

bool RequestFraming::chunkSizeByte(char c) {
  if (cr_ && c != '\n') return refuse(400, "a chunk size line must end in CRLF", true);
  if (c == '\r') {
    cr_ = true;
    return true;
  }
  if (c == '\n') {
    cr_ = false;
    if (line_.empty()) return refuse(400, "empty chunk size line (Transfer-Encoding: chunked)", true);
    line_.clear();
    remaining_ = chunkSize_;
    state_ = chunkSize_ == 0 ? State::LastChunkEnd : State::ChunkData;
    chunkSize_ = 0;
    chunkDigits_ = 0;
    return true;
  }
  int h = hexValue(c);
  if (h < 0)
    return refuse(400, c == ';' ? "chunk extensions (';') are not supported" : "a chunk size must be hexadecimal digits",
                  true);
  if (line_.size() >= kMaxChunkLine) return refuse(400, "a chunk size line longer than 32 bytes", true);
  if (chunkDigits_ > 0 || h > 0) chunkDigits_++;
  if (chunkDigits_ > 16) return refuse(400, "chunk size overflows 64 bits", true);
  chunkSize_ = chunkSize_ << 4 | uint64_t(h);
  line_ += c;
  return true;
}

bool isValidApprovalId(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id)
    if (!(isalnum((unsigned char)c) || c == '_' || c == '-')) return false;
  return true;
}

}  // namespace pine
