// One HTTPS request made by the supervisor for the broker, with `${secret:NAME}`
// placeholders in the URL and header values filled in here, so that no secret ever
// crosses into the broker. Secret values are redacted from everything that comes back
// (status headers, body, error texts). No Cap'n Proto here: the caller streams the
// chunks onward.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "supervisor/redact/redactor.h"

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
  std::string caFile;  // empty: the system store; otherwise only this bundle is trusted
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

// Makes the request; blocks until it ends. Returns an error text (what and why, never
// a secret value nor a filled-in URL or header) or nullopt on success.
// onHead is called once, before the first chunk, when the response head has arrived.
// onChunk gets the body in pieces, already redacted of every secret value used by this
// request and every value `redactor` knows (a value split across network reads is still
// found: output is released a line at a time, see StreamRedactor). Returning false from
// onChunk aborts the transfer. 3xx responses are returned, never followed.
// Safe to call from several threads at once.
std::optional<std::string> perform(const EgressRequest& request, const EgressPolicy& policy,
                                   const SecretLookup& secrets, const pine::redact::Redactor& redactor,
                                   const std::function<void(const EgressResponseHead&)>& onHead,
                                   const std::function<bool(std::string_view)>& onChunk);

}  // namespace pine::egress
