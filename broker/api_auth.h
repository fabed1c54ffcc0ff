// Who may use the control API and what a request may look like: the rules,
// apart from the HTTP mechanics, so that each can be tested on its own. All of
// them are checked before the body is read.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace pine {

// Which socket a request came in on: the home's unix socket (peer uid already
// checked) or loopback TCP.
enum class ApiListener { Unix, Tcp };

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

// Origin / Sec-Fetch-Site, token in the query, bearer token. nullopt when the request may proceed.
std::optional<ApiRefusal> checkApiRequest(const ApiRequestFacts& req, const std::string& token);

// The Host header (nullopt when absent). TCP: exactly 127.0.0.1:PORT or localhost:PORT (PORT the
// bound one), so that a DNS-rebound name is refused. Unix socket: localhost, with any port or none.
std::optional<ApiRefusal> checkHost(const std::optional<std::string>& host, ApiListener listener, int port);

// The request target's path as sent: origin-form, no dot segments, no empty segments, no encoded
// '/', '\\' or '.', no control bytes. Refusing these keeps "/v1/agents/../status" from meaning
// anything but a 400.
std::optional<ApiRefusal> checkPath(const std::string& rawPath);

// Content-Length and Transfer-Encoding as the server saw them (duplicates joined by ", ").
// Refuses both together, duplicates, non-numbers and any coding but chunked (400), and a declared
// length above `limit` (413, before a byte of the body is read). `declared` gets the length, or
// nullopt for a chunked body (read with `limit` as the cap).
std::optional<ApiRefusal> checkBodyFraming(const std::optional<std::string>& contentLength,
                                           const std::optional<std::string>& transferEncoding, uint64_t limit,
                                           std::optional<uint64_t>* declared);

// Keys of /v1/state/{key}: [A-Za-z0-9_.:-], 1 to 128 bytes, not starting with '.' or '-'.
// Approval ids: [A-Za-z0-9_-], 1 to 64 bytes.
bool isValidApprovalId(const std::string& id);

// Percent-decoding of one path segment or query item ('+' is a space only in queries).
// nullopt on a malformed escape.
std::optional<std::string> percentDecode(const std::string& s, bool plusIsSpace);

// Constant-time comparison (CRYPTO_memcmp) of equal-length strings; false when lengths differ.
bool tokenEquals(const std::string& a, const std::string& b);

}  // namespace pine
