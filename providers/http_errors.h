// Internal: a provider's non-2xx answer or error event as a ProviderError with a
// sentence that says what happened and what to do, the provider's own message included.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "providers/provider.h"

namespace pine::model::detail {

// Seconds to wait from Retry-After (seconds or an HTTP date) or retry-after-ms; -1 when absent.
int retryAfterSeconds(const Headers& headers);

// The message a provider put in an error body: error.message, error (a string), message,
// detail; else the body itself, cleaned and shortened.
std::string providerMessage(std::string_view body);
std::string providerMessage(const nlohmann::json& body);

ProviderError statusError(const std::string& providerName, int status, const Headers& headers, std::string_view body);

// An error reported inside a stream (or a 200 JSON body that is an error).
ProviderError eventError(const std::string& providerName, int status, const std::string& message);

}  // namespace pine::model::detail
