// The origin (scheme, host, port) of an address: the broker's download rule ("an address
// on the origin of one of the agent's remote MCP servers") and pined's choice of which
// model server's key a request may carry use the same reading, so the two sides of the
// boundary cannot disagree about a look-alike.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace pine {

// "https://host:443" form: scheme and host lower-cased, the default port
// written out. nullopt for anything that is not plainly http(s)://host[:port]/...
// (user info, backslashes, spaces and control characters, an empty host or a
// bad port), so that a look-alike never compares equal.
std::optional<std::string> urlOrigin(std::string_view url);

}  // namespace pine
