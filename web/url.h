// URLs as pine-web reads them, through libcurl's URL parser (the one the transfer uses, so the
// host checked is the host connected to).
#pragma once
#include <optional>
#include <string>

namespace pine::web {

struct UrlParts {
  std::string url;     // normalised
  std::string scheme;  // lower case
  std::string host;    // lower case, no brackets, no trailing dot
};

// nullopt and why when `url` is not an absolute http or https URL.
std::optional<UrlParts> parseWebUrl(const std::string& url, std::string& why);

// `ref` (absolute or relative, any scheme) against `base`; nullopt when it cannot be resolved.
std::optional<std::string> resolveUrl(const std::string& base, const std::string& ref);

// ASCII letters in lower case (host names, schemes, header names).
std::string lowerAscii(std::string s);

// Percent-encoding for a query value: everything but unreserved characters.
std::string queryEscape(const std::string& s);

}  // namespace pine::web
