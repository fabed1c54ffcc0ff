// The web server's own host lists (allowHosts, denyHosts), checked on the first address and
// on every redirect. The address rules (loopback, private, ...) are egress/address_policy's,
// applied to what each name resolves to when the connection is made.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace pine::web {

// `pattern` is a host name ("example.org": that host only) or "*.example.org" (any name under
// it, not example.org itself). Both sides compared without case and trailing dot.
bool hostMatches(const std::string& host, const std::string& pattern);

// Why `host` may not be fetched, or nullopt: denyHosts wins; a non-empty allowHosts admits only
// the names it matches.
std::optional<std::string> hostRefusal(const std::string& host, const std::vector<std::string>& allowHosts,
                                       const std::vector<std::string>& denyHosts);

}  // namespace pine::web
