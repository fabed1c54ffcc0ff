// One HTTP(S) request, made in a pine-egress process for pined, with `${secret:NAME}`
// placeholders in the URL and header values filled in here from the values the job
// carries, so that no secret ever crosses into the broker. Secret values are redacted
// from everything that comes back (status, headers, body, error texts). No Cap'n Proto
// here: the caller (job.cpp) streams the chunks onward.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "egress/request/request.h"
#include "redact/redactor.h"

namespace pine::egress {

// Initialises libcurl and OpenSSL ahead of the first request (pine-egress does it while it
// waits for its job); perform() does it itself when it has not been done.
void prepare();

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
