// The `fetch` tool: one web address as text. Each hop (the address and every redirect, at most
// five) is checked against the host lists here and made by egress::perform(), which resolves
// the name, checks every address with egress/address_policy and pins the connection to the
// checked addresses; redirects are followed here, so each one is checked again.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace pine::web {

struct FetchRules {
  std::vector<std::string> allowHosts;
  std::vector<std::string> denyHosts;
  bool allowPrivate = false;               // loopback, private and link-local addresses, and plain http, too
  int maxRedirects = 5;
  std::size_t maxBodyBytes = 2u << 20;     // decoded; a longer body is cut here and said so
  long connectTimeoutMs = 10000;
  long totalTimeoutMs = 30000;             // per hop
};

struct ToolResult {
  bool isError = false;
  std::string text;  // the page as text, or what went wrong
};

ToolResult fetchUrl(const std::string& url, const FetchRules& rules);

// What a Content-Type is to fetch: "html", "text" (plain text and JSON, as they are) or "" (refused).
std::string contentKind(const std::string& contentType);

}  // namespace pine::web
