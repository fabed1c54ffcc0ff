// A small blocking HTTP/1.1 client for pinectl: one request per connection to
// the broker's unix socket, bearer token attached.
#pragma once
#include <string>

namespace pine {

struct HttpResult {
  int status = 0;
  std::string body;
};

class ControlClient {
 public:
  // Reads the token from <home>/data/http-token; throws with what to do if it cannot.
  explicit ControlClient(std::string home);
  HttpResult request(const std::string& method, const std::string& path, const std::string& jsonBody = "");

 private:
  std::string home_, socket_, token_;
};

// Parses one HTTP/1.1 response (Content-Length, chunked, or until close). Throws on malformed input.
HttpResult parseHttpResponse(const std::string& raw);
// True once `raw` holds a whole response (by Content-Length or the last chunk).
bool responseComplete(const std::string& raw);

}  // namespace pine
