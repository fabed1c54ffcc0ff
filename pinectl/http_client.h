// A small blocking HTTP/1.1 client for pinectl: one request per connection to
// the broker's unix socket, bearer token attached. Answers are read whole
// (request) or as server-sent events while they arrive (stream).
#pragma once
#include <csignal>
#include <functional>
#include <string>
#include <string_view>

namespace pine {

struct HttpResult {
  int status = 0;
  std::string body;
};

// One server-sent event: its fields as sent ("event" defaults to "message").
struct SseEvent {
  std::string id;
  std::string event = "message";
  std::string data;
};

class ControlClient {
 public:
  // Reads the token from <home>/data/http-token; throws with what to do if it cannot.
  explicit ControlClient(std::string home);
  HttpResult request(const std::string& method, const std::string& path, const std::string& jsonBody = "");
  // Asks for text/event-stream. When the answer is a stream, calls onEvent for each event until
  // it returns false or the stream ends, and returns {200, ""}. Any other answer is returned whole.
  HttpResult stream(const std::string& method, const std::string& path, const std::string& jsonBody,
                    const std::function<bool(const SseEvent&)>& onEvent);
  // A flag a signal handler sets (pinectl chat's Ctrl-C): a read that a signal interrupts while it
  // is set gives up instead of retrying, so a waiting stream ends early (as if it had closed).
  void setInterrupt(const volatile std::sig_atomic_t* flag) { interrupt_ = flag; }

 private:
  int connectAndSend(const std::string& method, const std::string& path, const std::string& body, bool sse);
  std::string home_, socket_, token_;
  const volatile std::sig_atomic_t* interrupt_ = nullptr;
};

// Percent-encodes everything but A-Z a-z 0-9 - _ . ~ (a path segment or query value).
std::string urlEncode(std::string_view s);

// Parses one HTTP/1.1 response (Content-Length, chunked, or until close). Throws on malformed input.
HttpResult parseHttpResponse(const std::string& raw);
// True once `raw` holds a whole response (by Content-Length or the last chunk).
bool responseComplete(const std::string& raw);

// Undoes chunked transfer coding a piece at a time, as bytes arrive.
class ChunkedDecoder {
 public:
  // Appends the payload decoded from `bytes` to `out`. Throws on a malformed chunk header.
  void feed(std::string_view bytes, std::string& out);
  bool done() const { return state_ == State::Done; }

 private:
  enum class State { Size, Data, DataEnd, Trailer, Done };
  State state_ = State::Size;
  std::string line_;
  size_t remaining_ = 0;
};

// Splits a text/event-stream into events as bytes arrive (lines end in \n or \r\n; comment lines
// starting with ':' are skipped; multi-line data is joined with \n).
class SseParser {
 public:
  // Calls onEvent for each completed event; stops early (returns false) when onEvent does.
  bool feed(std::string_view bytes, const std::function<bool(const SseEvent&)>& onEvent);

 private:
  std::string line_;
  SseEvent current_;
  bool hasData_ = false;
};

}  // namespace pine
