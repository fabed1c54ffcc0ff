#include "egress/request/placeholders.h"

#include <algorithm>

namespace pine::egress {
namespace {

constexpr std::size_t kMaxNameLength = 128;

bool isNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

bool isTokenChar(char c) {  // RFC 9110 tchar
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Every placeholder in text, or an error for a malformed one.
std::optional<std::string> findPlaceholders(std::string_view text, std::string_view where,
                                            std::vector<Placeholder>& out) {
  for (std::size_t p = text.find(kPlaceholderOpen); p != std::string_view::npos; p = text.find(kPlaceholderOpen, p)) {
    const std::size_t nameStart = p + kPlaceholderOpen.size();
    std::size_t q = nameStart;
    while (q < text.size() && isNameChar(text[q])) ++q;
    if (q == nameStart || q >= text.size() || text[q] != '}' || q - nameStart > kMaxNameLength) {
      return "malformed secret placeholder in " + std::string(where) +
             " (expected ${secret:NAME}, NAME of letters, digits, '_', '-', '.')";
    }
    out.push_back({p, q + 1, std::string(text.substr(nameStart, q - nameStart))});
    p = q + 1;
  }
  return std::nullopt;
}

// Header names egress sets itself or that would defeat a check.
std::optional<std::string> reservedHeader(const std::string& name) {
  const std::string n = lowerAscii(name);
  if (n == "host") return "the Host header is set from the URL (it must match the host that was checked)";
  if (n == "accept-encoding") return "Accept-Encoding is set by egress, which decodes the body so that it can be redacted";
  if (n == "content-length" || n == "transfer-encoding") return name + " is set by egress from the body";
  return std::nullopt;
}

}  // namespace

bool isToken(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), isTokenChar); }

std::string lowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

UrlPart partAt(std::string_view url, std::size_t pos) {
  const std::size_t sep = url.find("://");
  if (sep == std::string_view::npos || pos < sep + 3) return UrlPart::Scheme;
  const std::size_t authStart = sep + 3;
  std::size_t authEnd = url.find_first_of("/?#", authStart);
  if (authEnd == std::string_view::npos) authEnd = url.size();
  if (pos < authEnd) {
    const std::size_t at = url.substr(authStart, authEnd - authStart).rfind('@');
    return at != std::string_view::npos && pos < authStart + at ? UrlPart::Userinfo : UrlPart::Host;
  }
  const std::size_t query = url.find_first_of("?#", authEnd);
  return query == std::string_view::npos || pos < query ? UrlPart::Path : UrlPart::Query;
}

std::string encodeFor(UrlPart part, std::string_view value) {
  std::string_view keep;
  switch (part) {
    case UrlPart::Userinfo: keep = "-._~!$&'()*+,;="; break;  // ':' and '@' would split it
    case UrlPart::Path: keep = "-._~!$&'()*+,;=:@"; break;   // '/' would add a segment
    default: keep = "-._~!$'()*,;:@/?"; break;               // '&', '=', '+' mean something in a query
  }
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum || keep.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::vector<std::string> Templates::names() const {
  std::vector<std::string> out;
  auto add = [&](const std::vector<Placeholder>& list) {
    for (const Placeholder& p : list)
      if (std::find(out.begin(), out.end(), p.name) == out.end()) out.push_back(p.name);
  };
  add(url);
  for (const auto& list : headers) add(list);
  return out;
}

std::optional<std::string> checkTemplates(const EgressRequest& request, Templates& out) {
  out = Templates{};
  if (request.method.find(kPlaceholderOpen) != std::string::npos) return "a secret placeholder in the method is refused";
  if (!isToken(request.method)) return "the method is not a valid HTTP token";
  if (request.body.find(kPlaceholderOpen) != std::string::npos) {
    return "a secret placeholder in the body is refused (placeholders go in the URL or header values)";
  }
  if (auto e = findPlaceholders(request.url, "the URL", out.url)) return e;
  for (const Placeholder& p : out.url) {
    const UrlPart part = partAt(request.url, p.begin);
    if (part == UrlPart::Host) {
      return "a secret placeholder in the host part is refused (the host name is sent to DNS in clear)";
    }
    if (part == UrlPart::Scheme) return "a secret placeholder in the scheme is refused";
  }
  out.headers.resize(request.headers.size());
  for (std::size_t i = 0; i < request.headers.size(); ++i) {
    const auto& [name, value] = request.headers[i];
    if (name.find(kPlaceholderOpen) != std::string::npos) return "a secret placeholder in a header name is refused";
    if (!isToken(name)) return "header name '" + name + "' is not a valid HTTP token";
    if (auto r = reservedHeader(name)) return r;
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return "header " + name + " contains a line break or NUL";
    }
    if (auto e = findPlaceholders(value, "header " + name, out.headers[i])) return e;
  }
  return std::nullopt;
}

std::string urlForMessages(std::string_view url) {
  std::string out(url);
  if (size_t sep = out.find("://"); sep != std::string::npos) {
    const size_t hostEnd = out.find_first_of("/?#", sep + 3);
    const size_t at = out.rfind('@', hostEnd);
    if (at != std::string::npos && at > sep) out.erase(sep + 3, at + 1 - (sep + 3));
  }
  return out.size() <= 200 ? out : out.substr(0, 200) + "...";
}

}  // namespace pine::egress
