// The rules of a polled web address (an `http` source) that the broker and pined read the
// same way: where a redirect may lead (the configured scheme, host and port only, so the
// source's token never goes elsewhere), and whether an address is on the local network (what
// the owner's question names, and what `network: local` must confirm).
#pragma once
#include <string>
#include <string_view>

namespace pine {

// Where a redirect answered for `current` leads, resolved against it (absolute, "//host/...",
// "/path" or a relative path), or why it is not followed: another scheme, host or port than
// `configured`, or a Location that is not an address.
struct RedirectHop {
  std::string url;      // set when the hop may be followed
  std::string refusal;  // set when it may not
};
RedirectHop redirectHop(std::string_view configured, std::string_view current, std::string_view location);

// Whether `url` has the scheme, host and port of `configured` (common/url_origin.h's reading).
bool sameOrigin(std::string_view configured, std::string_view url);

// Why `url` is an address on the local network, or "" when its host is a public name or
// address: an IP literal in a loopback, private, link-local or shared range, `localhost`,
// a single-label name, or a name under .local, .lan, .home.arpa or .internal. A public-looking
// name may still resolve into the local network: egress refuses that unless confirmed.
std::string localNetworkReason(std::string_view url);

}  // namespace pine
