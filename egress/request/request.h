// What one egress request is: the request with its `${secret:NAME}` placeholders still in,
// and the rules it runs under. pined builds these (from the broker's call and the
// configuration) and sends them to a pine-egress process, which makes the request.
// Plain structs, no libcurl: pined links this folder, never the HTTP code.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pine::egress {

struct SecretLookup {
  virtual ~SecretLookup() = default;
  virtual std::optional<std::string> get(std::string_view name) const = 0;
};

struct EgressPolicy {
  bool allowPrivate = false;
  bool allowLoopback = false;
  bool allowPlainHttp = false;
  // Host names allowed ("api.example.com", or "*.example.com" for any subdomain);
  // empty = any public host.
  std::vector<std::string> allowHosts;
  long connectTimeoutMs = 10000;  // also bounds name resolution
  long totalTimeoutMs = 60000;
  // When set (whole seconds, at least 1000): a transfer that receives nothing for this long ends,
  // however long the total allows. Model answers stream for minutes; a stalled one should not.
  long idleTimeoutMs = 0;
  std::size_t maxResponseBytes = 16 << 20;  // decoded body bytes
  std::string caFile;  // a PEM bundle's path: only it is trusted. Empty: caPem, else the system store
  std::string caPem;   // a PEM bundle's contents (pined reads --egress-ca and sends it with the job)
};

struct EgressRequest {
  std::string method = "GET";
  std::string url;  // placeholders allowed in userinfo, path, query and fragment, never in the host
  std::vector<std::pair<std::string, std::string>> headers;  // placeholders allowed in values
  std::string body;  // sent as is; a placeholder here is refused
};

struct EgressResponseHead {
  long status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // redacted
};

}  // namespace pine::egress
