#include "broker/api_auth.h"

#include <openssl/crypto.h>

namespace pine {

bool tokenEquals(const std::string& a, const std::string& b) {
  if (a.empty() || a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

static bool queryCarriesToken(const std::string& query) {
  // Tokens in URLs end up in logs and histories: refuse them outright.
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t end = query.find('&', pos);
    std::string item = query.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    std::string key = item.substr(0, item.find('='));
    for (auto& c : key) c = (char)tolower((unsigned char)c);
    if (key == "token" || key == "access_token" || key == "auth" || key == "authorization" || key == "bearer")
      return true;
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return false;
}

std::optional<ApiRefusal> checkApiRequest(const ApiRequestFacts& req, const std::string& token) {
  // A browser page must not drive the daemon, not even /health.
  if (req.hasOrigin || req.hasSecFetchSite)
    return ApiRefusal{403, "requests from web pages are refused (Origin or Sec-Fetch-Site present)"};
  if (queryCarriesToken(req.query))
    return ApiRefusal{400, "send the token in the Authorization header, never in the URL"};
  if (req.method == "GET" && req.path == "/health") return std::nullopt;
  const std::string prefix = "Bearer ";
  if (req.authorization.size() <= prefix.size() || req.authorization.compare(0, prefix.size(), prefix) != 0)
    return ApiRefusal{401, "missing bearer token (Authorization: Bearer <data/http-token>)"};
  if (!tokenEquals(req.authorization.substr(prefix.size()), token)) return ApiRefusal{401, "wrong token"};
  return std::nullopt;
}

}  // namespace pine
