// Which addresses egress may connect to. The check runs on every address the host
// resolves to (and again on the address curl is about to connect to), so a name that
// points at the owner's LAN or at this machine is refused unless configured.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include <optional>
#include <string>
#include <string_view>

namespace pine::egress {

enum class AddressKind {
  Public,    // globally routed unicast
  Loopback,  // 127/8, ::1 (allowed by allowLoopback)
  Private,   // RFC 1918, CGNAT, link-local, ULA, site-local, benchmark (allowed by allowPrivate)
  Reserved,  // never a server: 0/8 (Linux connects 0.0.0.0 to this host), multicast,
             // broadcast, 240/4, ::, documentation and other special-purpose ranges
};

AddressKind classify(const in_addr& a);
// IPv4-mapped, NAT64 and 6to4 forms are judged by the IPv4 address they carry.
AddressKind classify(const in6_addr& a);
// Anything but AF_INET/AF_INET6 is Reserved.
AddressKind classify(const sockaddr* sa);

std::string_view describe(AddressKind k);

struct AddressRules {
  bool allowPrivate = false;
  bool allowLoopback = false;
};

// Why the address may not be used (e.g. "10.0.0.1 is a private address"), or nullopt.
std::optional<std::string> refusal(const sockaddr* sa, AddressRules rules);

// Numeric text of an address ("10.0.0.1", "::1"); empty for other families.
std::string addressText(const sockaddr* sa);

}  // namespace pine::egress
