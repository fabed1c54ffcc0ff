#include "broker/api_auth.h"

#include <openssl/crypto.h>

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
  const std::string prefix = "Bearer ";
  if (req.authorization.size() <= prefix.size() || req.authorization.compare(0, prefix.size(), prefix) != 0)
    return ApiRefusal{401, "missing bearer token (Authorization: Bearer <data/http-token>)"};
  if (!tokenEquals(req.authorization.substr(prefix.size()), token)) return ApiRefusal{401, "wrong token"};
  return std::nullopt;
}

std::optional<ApiRefusal> checkHost(const std::optional<std::string>& host, ApiListener listener, int port) {
  if (!host) return ApiRefusal{403, "no Host header: send Host: localhost" +
                                        (listener == ApiListener::Tcp ? ":" + std::to_string(port) : std::string())};
  std::string h = lower(*host);
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
  std::string limitText = limit >= (1u << 20) ? std::to_string(limit >> 20) + " MB" : std::to_string(limit) + " bytes";
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
  if (n > limit) return ApiRefusal{413, "the body is larger than " + limitText};
  *declared = n;
  return std::nullopt;
}

bool isValidApprovalId(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id)
    if (!(isalnum((unsigned char)c) || c == '_' || c == '-')) return false;
  return true;
}

}  // namespace pine
