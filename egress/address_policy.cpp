#include "egress/address_policy.h"

#include <arpa/inet.h>

#include <cstdint>
#include <cstring>

namespace pine::egress {
namespace {

struct V4Range {
  std::uint32_t base;
  int bits;
  AddressKind kind;
};

constexpr std::uint32_t ip(unsigned a, unsigned b, unsigned c, unsigned d) {
  return (a << 24) | (b << 16) | (c << 8) | d;
}

// The ranges do not overlap, so order does not matter.
constexpr V4Range kV4[] = {
    {ip(0, 0, 0, 0), 8, AddressKind::Reserved},        // "this network"; 0.0.0.0 reaches this host
    {ip(10, 0, 0, 0), 8, AddressKind::Private},
    {ip(100, 64, 0, 0), 10, AddressKind::Private},     // CGNAT
    {ip(127, 0, 0, 0), 8, AddressKind::Loopback},
    {ip(169, 254, 0, 0), 16, AddressKind::Private},    // link-local (cloud metadata lives here)
    {ip(172, 16, 0, 0), 12, AddressKind::Private},
    {ip(192, 0, 0, 0), 24, AddressKind::Reserved},     // IETF protocol assignments
    {ip(192, 0, 2, 0), 24, AddressKind::Reserved},     // TEST-NET-1
    {ip(192, 88, 99, 0), 24, AddressKind::Reserved},   // 6to4 relay anycast (deprecated)
    {ip(192, 168, 0, 0), 16, AddressKind::Private},
    {ip(198, 18, 0, 0), 15, AddressKind::Private},     // benchmarking; also fake-IP proxies on a LAN
    {ip(198, 51, 100, 0), 24, AddressKind::Reserved},  // TEST-NET-2
    {ip(203, 0, 113, 0), 24, AddressKind::Reserved},   // TEST-NET-3
    {ip(224, 0, 0, 0), 4, AddressKind::Reserved},      // multicast
    {ip(240, 0, 0, 0), 4, AddressKind::Reserved},      // reserved, broadcast
};

AddressKind classifyV4(std::uint32_t host) {
  for (const V4Range& r : kV4) {
    const std::uint32_t mask = r.bits == 0 ? 0 : ~std::uint32_t{0} << (32 - r.bits);
    if ((host & mask) == r.base) return r.kind;
  }
  return AddressKind::Public;
}

std::uint32_t v4At(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

bool prefix(const std::uint8_t* a, std::initializer_list<std::uint8_t> bytes) {
  std::size_t i = 0;
  for (std::uint8_t b : bytes) {
    if (a[i++] != b) return false;
  }
  return true;
}

bool allZero(const std::uint8_t* a, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != 0) return false;
  }
  return true;
}

}  // namespace

AddressKind classify(const in_addr& a) { return classifyV4(ntohl(a.s_addr)); }

AddressKind classify(const in6_addr& addr) {
  const std::uint8_t* a = addr.s6_addr;
  if (allZero(a, 15)) {
    if (a[15] == 1) return AddressKind::Loopback;  // ::1
    if (a[15] == 0) return AddressKind::Reserved;  // ::
  }
  // ::ffff:a.b.c.d reaches a.b.c.d on a dual-stack socket.
  if (allZero(a, 10) && a[10] == 0xff && a[11] == 0xff) return classifyV4(v4At(a + 12));
  // NAT64 well-known prefix 64:ff9b::/96 is translated to the IPv4 address it carries.
  if (prefix(a, {0x00, 0x64, 0xff, 0x9b}) && allZero(a + 4, 8)) return classifyV4(v4At(a + 12));
  if (prefix(a, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01})) return AddressKind::Private;  // local-use NAT64
  // IPv4-compatible ::a.b.c.d (deprecated) and the rest of ::/8.
  if (a[0] == 0) return AddressKind::Reserved;
  if ((a[0] & 0xfe) == 0xfc) return AddressKind::Private;                            // fc00::/7 ULA
  if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) return AddressKind::Private;            // fe80::/10 link-local
  if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0) return AddressKind::Private;            // fec0::/10 site-local
  if (a[0] == 0xff) return AddressKind::Reserved;                                    // multicast
  // Only 2000::/3 is globally routed unicast; everything else is special-purpose.
  if ((a[0] & 0xe0) != 0x20) return AddressKind::Reserved;
  if (prefix(a, {0x20, 0x02})) {
    // 6to4: the relay delivers to the IPv4 address in bits 16..48.
    return classifyV4(v4At(a + 2));
  }
  if (prefix(a, {0x20, 0x01, 0x0d, 0xb8})) return AddressKind::Reserved;  // documentation
  if (prefix(a, {0x20, 0x01, 0x00, 0x00})) return AddressKind::Reserved;  // Teredo (hides an IPv4 peer)
  if (prefix(a, {0x20, 0x01, 0x00}) && (a[3] & 0xe0) == 0x00) {
    // 2001::/23 IETF protocol assignments (ORCHID, AMT, ...), none of them a web server.
    return AddressKind::Reserved;
  }
  return AddressKind::Public;
}

AddressKind classify(const sockaddr* sa) {
  if (sa == nullptr) return AddressKind::Reserved;
  if (sa->sa_family == AF_INET) {
    sockaddr_in in;
    std::memcpy(&in, sa, sizeof in);
    return classify(in.sin_addr);
  }
  if (sa->sa_family == AF_INET6) {
    sockaddr_in6 in6;
    std::memcpy(&in6, sa, sizeof in6);
    return classify(in6.sin6_addr);
  }
  return AddressKind::Reserved;
}

std::string_view describe(AddressKind k) {
  switch (k) {
    case AddressKind::Public: return "public";
    case AddressKind::Loopback: return "loopback";
    case AddressKind::Private: return "private";
    case AddressKind::Reserved: return "reserved";
  }
  return "reserved";
}

std::string addressText(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa == nullptr) return {};
  if (sa->sa_family == AF_INET) {
    sockaddr_in in;
    std::memcpy(&in, sa, sizeof in);
    if (inet_ntop(AF_INET, &in.sin_addr, buf, sizeof buf) != nullptr) return buf;
  } else if (sa->sa_family == AF_INET6) {
    sockaddr_in6 in6;
    std::memcpy(&in6, sa, sizeof in6);
    if (inet_ntop(AF_INET6, &in6.sin6_addr, buf, sizeof buf) != nullptr) return buf;
  }
  return {};
}

std::optional<std::string> refusal(const sockaddr* sa, AddressRules rules) {
  const AddressKind k = classify(sa);
  const bool ok = k == AddressKind::Public || (k == AddressKind::Loopback && rules.allowLoopback) ||
                  (k == AddressKind::Private && rules.allowPrivate);
  if (ok) return std::nullopt;
  std::string text = addressText(sa);
  if (text.empty()) text = "an address of an unsupported family";
  std::string why = text + " is a " + std::string(describe(k)) + " address";
  if (k == AddressKind::Loopback) why += " (allowLoopback is off)";
  if (k == AddressKind::Private) why += " (allowPrivate is off)";
  if (k == AddressKind::Reserved) why += " and is never connected to";
  return why;
}

}  // namespace pine::egress
