#include "common/web_address.h"

#include <arpa/inet.h>

#include <cctype>
#include <cstdint>
#include <optional>

#include "common/url_origin.h"

namespace pine {
namespace {

constexpr size_t kMaxUrl = 8192;

bool startsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "https://host:443" -> "host" (brackets of an IPv6 literal taken off).
std::string hostOf(const std::string& origin) {
  std::string rest = origin.substr(origin.find("://") + 3);
  std::string host = rest.substr(0, rest.rfind(':'));
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  return host;
}

std::string v4Reason(uint32_t a, const std::string& text) {
  auto in = [a](uint32_t net, int bits) { return (a >> (32 - bits)) == (net >> (32 - bits)); };
  if (in(0x7f000000, 8)) return text + " is a loopback address (this machine)";
  if (in(0x0a000000, 8) || in(0xac100000, 12) || in(0xc0a80000, 16)) return text + " is a private address";
  if (in(0xa9fe0000, 16)) return text + " is a link-local address";
  if (in(0x64400000, 10)) return text + " is a shared (carrier-grade NAT) address";
  if (in(0x00000000, 8)) return text + " reaches this machine";
  return "";
}

}  // namespace

bool sameOrigin(std::string_view configured, std::string_view url) {
  auto a = urlOrigin(configured), b = urlOrigin(url);
  return a && b && *a == *b;
}

RedirectHop redirectHop(std::string_view configured, std::string_view current, std::string_view location) {
  RedirectHop hop;
  if (location.empty()) {
    hop.refusal = "a redirect without a Location";
    return hop;
  }
  if (location.size() > kMaxUrl) {
    hop.refusal = "a redirect to an address over 8 KiB";
    return hop;
  }
  for (char c : location)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '\\') {
      hop.refusal = "a redirect to a Location that is not an address";
      return hop;
    }
  std::string_view noFragment = location.substr(0, location.find('#'));
  std::optional<std::string> base = urlOrigin(current);
  if (!base) {
    hop.refusal = "the address being fetched is not plainly http(s)://host";
    return hop;
  }
  std::string target;
  if (startsWithNoCase(noFragment, "http://") || startsWithNoCase(noFragment, "https://")) {
    target = noFragment;
  } else if (noFragment.substr(0, 2) == "//") {
    target = base->substr(0, base->find("://") + 1) + std::string(noFragment);
  } else if (noFragment.find(':') < noFragment.find_first_of("/?")) {
    // Named only when it is a scheme's name (RFC 3986 3.1, short): the rest is the server's text,
    // which status lines and logs must not repeat.
    std::string_view scheme = noFragment.substr(0, noFragment.find(':'));
    bool named = !scheme.empty() && scheme.size() <= 16 && std::isalpha((unsigned char)scheme[0]);
    for (char ch : scheme) named &= std::isalnum((unsigned char)ch) || ch == '+' || ch == '-' || ch == '.';
    hop.refusal = named ? "a redirect to another scheme (" + std::string(scheme) + ")" : "a redirect to another scheme";
    return hop;
  } else if (!noFragment.empty() && noFragment.front() == '/') {
    target = *base + std::string(noFragment);
  } else {
    // Relative to the current address's folder (its path up to the last '/', query dropped).
    std::string_view cur = current.substr(0, current.find_first_of("?#"));
    size_t pathStart = cur.find('/', cur.find("://") + 3);
    std::string folder = pathStart == std::string_view::npos ? "/" : std::string(cur.substr(pathStart, cur.rfind('/') - pathStart + 1));
    target = *base + folder + std::string(noFragment);
  }
  std::optional<std::string> want = urlOrigin(configured), got = urlOrigin(target);
  if (!got) {
    hop.refusal = "a redirect to a Location that is not a plain http(s) address";
    return hop;
  }
  if (!want || *want != *got) {
    hop.refusal = "a redirect to another host (" + *got + ", not " + want.value_or("?") +
                  "): only the configured scheme, host and port are followed";
    return hop;
  }
  hop.url = std::move(target);
  return hop;
}

std::string localNetworkReason(std::string_view url) {
  std::optional<std::string> origin = urlOrigin(url);
  if (!origin) return "";
  const std::string host = hostOf(*origin);
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return v4Reason(ntohl(v4.s_addr), host);
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    const uint8_t* b = v6.s6_addr;
    bool mapped = true;
    for (int i = 0; i < 10; ++i) mapped = mapped && b[i] == 0;
    if (mapped && b[10] == 0xff && b[11] == 0xff)
      return v4Reason(uint32_t(b[12]) << 24 | uint32_t(b[13]) << 16 | uint32_t(b[14]) << 8 | b[15], host);
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return host + " is a loopback address (this machine)";
    if ((b[0] & 0xfe) == 0xfc) return host + " is a private (unique local) address";
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return host + " is a link-local address";
    return "";
  }
  if (host == "localhost" || endsWith(host, ".localhost")) return "'" + host + "' names this machine";
  if (host.find('.') == std::string::npos) return "'" + host + "' is a single-label name, found on the local network";
  for (std::string_view suffix : {".local", ".lan", ".home.arpa", ".internal"})
    if (endsWith(host, suffix)) return "'" + host + "' is a local-network name (" + std::string(suffix.substr(1)) + ")";
  return "";
}

}  // namespace pine
