#include "common/url_origin.h"

#include <cctype>

namespace pine {

std::optional<std::string> urlOrigin(std::string_view url) {
  for (char c : url)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '\\') return std::nullopt;
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) return std::nullopt;
  std::string scheme;
  for (char c : url.substr(0, sep)) scheme += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string port;
  if (scheme == "https") port = "443";
  else if (scheme == "http") port = "80";
  else return std::nullopt;
  std::string_view rest = url.substr(sep + 3);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string_view::npos) return std::nullopt;
  std::string_view host = authority;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(0, close + 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return std::nullopt;
      port = std::string(after.substr(1));
    }
  } else if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = std::string(authority.substr(colon + 1));
  }
  if (host.empty() || port.empty() || port.size() > 5) return std::nullopt;
  for (char c : port)
    if (c < '0' || c > '9') return std::nullopt;
  int p = std::stoi(port);
  if (p <= 0 || p > 65535) return std::nullopt;
  std::string h;
  for (char c : host) h += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!h.empty() && h.back() == '.') h.pop_back();  // "host." is the same host
  if (h.empty()) return std::nullopt;
  return scheme + "://" + h + ":" + std::to_string(p);
}

}  // namespace pine
