// Who may use the control API: the rules, apart from the HTTP mechanics, so
// that each can be tested on its own.
#pragma once
#include <optional>
#include <string>

namespace pine {

struct ApiRequestFacts {
  std::string method;
  std::string path;            // without the query
  std::string query;           // after '?', may be empty
  std::string authorization;   // the Authorization header, empty when absent
  bool hasOrigin = false;      // an Origin header: a browser is making this request
  bool hasSecFetchSite = false;
};

struct ApiRefusal {
  int status;
  std::string message;
};

// nullopt when the request may proceed. Checked before the body is read.
std::optional<ApiRefusal> checkApiRequest(const ApiRequestFacts& req, const std::string& token);

// Constant-time comparison (CRYPTO_memcmp) of equal-length strings; false when lengths differ.
bool tokenEquals(const std::string& a, const std::string& b);

}  // namespace pine
