// The HTTP side of pine-mcp-remote: the server's address, resolved and checked once
// (egress/address_policy.h) and pinned for the whole session, so that DNS rebinding cannot move
// it; and one exchange over libcurl to that address only (no redirects, no proxies, no .netrc,
// TLS verified, plain http only to this machine or the local network).
#pragma once
#include <sys/socket.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egress/address_policy.h"

namespace pine::mcp_remote {

struct Target {
  std::string url;     // as configured
  std::string scheme, host, port;
  std::vector<sockaddr_storage> addrs;  // the checked addresses: the only ones connected to
  egress::AddressRules rules;
  std::string resolveEntry;  // CURLOPT_RESOLVE's "host:port:addr,..." (empty for an IP literal)
};

// Resolves and checks `url`. A host written as an IP address (or `localhost`) may be on this
// machine or the local network, as the owner wrote it; a name must resolve to public addresses
// only. Plain http only when every address is loopback or private. Why not, or nullopt.
std::optional<std::string> resolveTarget(const std::string& url, long timeoutMs, Target& t);

// `ref` (an absolute URL or a path) against the target's URL; nullopt and why when it names
// another scheme, host or port.
std::optional<std::string> sameOrigin(const Target& t, const std::string& ref, std::string& absolute);

struct Exchange {
  std::string method = "POST";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  long connectTimeoutMs = 10000;
  long totalTimeoutMs = 0;  // 0: none (a stream)
  // Called once the head is in: the status and the headers' values it asks for (lower case names).
  std::function<void(long status, const std::string& contentType, const std::string& sessionId)> onHead;
  // Each piece of the body; false ends the exchange (not an error: `stopped` is then set).
  std::function<bool(std::string_view)> onBody;
};

struct Outcome {
  long status = 0;
  bool stopped = false;  // onBody asked to stop
  std::string error;     // empty when an answer came (any status)
};

Outcome perform(const Target& t, const Exchange& x);

}  // namespace pine::mcp_remote
