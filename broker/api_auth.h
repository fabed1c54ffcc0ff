// Who may use the control API and what a request may look like: the rules,
// apart from the HTTP mechanics, so that each can be tested on its own. All of
// them are checked before the body is read; the head's limits and framing
// (RequestFraming) even before kj-http buffers the head.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

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

// The body's media type when it has one: JSON (application/json or a +json type, any parameters)
// or no Content-Type at all; else 415. `hasBody`: a Content-Length above 0, or chunked.
std::optional<ApiRefusal> checkContentType(const std::optional<std::string>& contentType, bool hasBody);

// How large a request head may be. Checked on the bytes as they arrive, so that a head over them is
// answered before kj-http buffers it (its own cap is 128 KiB a head, with no answer) and before the
// token is looked at: webhooks from strangers are served on the same listeners.
struct HttpHeadLimits {
  size_t maxTarget = 4096;      // the request target, path and query: 414 above
  size_t maxHeaderLine = 8192;  // one header line without its line end: 431 above
  size_t maxHeaderLines = 100;  // 431 above
  size_t maxHead = 32768;       // the request line, header lines, line ends and the blank line: 431 above
  // Requests read ahead of their answers, at most, and the bytes from the start of the oldest of
  // them: past either the next request waits (RequestFraming::full()), it is never refused.
  size_t maxAhead = 4096;
  uint64_t maxAheadBytes = 1 << 20;
};

struct FramingRefusal {
  int status;           // 400, 414 or 431
  std::string message;
  // In a body the HTTP server is reading: its reader fails and the route answers (400). Else in a
  // head (or after a body, where the next head would start): the connection answers and closes.
  bool inBody;
  // Fields after a chunked body's last chunk: kj-http ended that body before them, and the request
  // they came with is refused with them (its route asks, LimitedConnection::takeRefusal).
  bool trailer = false;
};

// Follows one connection's bytes request after request as HTTP/1.1 frames them: the head line by
// line (limits above), then the body by Content-Length or chunked coding. It is stricter than
// kj-http wherever kj-http is lenient, so that the two never disagree on where a head or a body
// ends: a bare CR (a line end to kj-http), NUL or another control byte, a folded line, a space
// before a header's colon, a request line but METHOD SP TARGET SP HTTP/1.x, a chunk extension,
// a trailer, and a chunk size beyond 64 bits (which kj-http wraps to a small one) are refused
// (400). A body framing it cannot follow (Content-Length twice or not a number, with
// Transfer-Encoding, a coding but chunked) ends the connection: the route refuses that request
// (checkBodyFraming), and no byte after its head is passed on. Nor is a byte after a request that
// asked to close, as the control API reads the Connection header (closed()).
class RequestFraming {
 public:
  explicit RequestFraming(HttpHeadLimits limits = {}) : limits_(limits) {}
  // Takes the connection's next bytes. Returns how many of them may go on to the HTTP parser: all,
  // or fewer once refusal() is set (the rest, and everything after, never reach it), once closed(),
  // or once full() (the rest is scanned again when some of the requests ahead have been taken).
  size_t scan(const char* data, size_t size);
  // maxAhead requests, or maxAheadBytes, were passed and not yet taken (takeHttp10), and the
  // next request would start: it is not passed on, nor refused, until one of those is served. A
  // client that sends more ahead is held back by not reading its socket, never cut off (that
  // would lose the answers of requests already served).
  bool full() const { return fullAt(passed_); }
  const std::optional<FramingRefusal>& refusal() const { return refusal_; }
  // The last request asked to close (Connection: close, or HTTP/1.0 without keep-alive) and has
  // ended: no byte after it is passed on (scan returns fewer), without a refusal.
  bool closed() const { return state_ == State::Ended; }
  size_t heads() const { return heads_; }                // complete request heads so far
  bool betweenRequests() const { return state_ == State::RequestLine && line_.empty() && !cr_; }
  size_t buffered() const { return line_.size(); }       // kept meanwhile: one line, within the limits
  // Whether the oldest request line not yet taken said HTTP/1.0 (kj-http does not tell the
  // version): taken once per request, in order, by whoever serves them.
  bool takeHttp10() {
    if (versions_.empty()) return false;
    bool v = versions_.front().http10;
    versions_.pop_front();
    return v;
  }

 private:
  enum class State { RequestLine, HeaderLine, FixedBody, ChunkSize, ChunkData, ChunkDataEnd, LastChunkEnd, Closed, Ended };
  bool refuse(int status, std::string message, bool inBody);
  size_t passed(size_t n) {  // scan's answer, counted
    passed_ += n;
    return n;
  }
  bool fullAt(uint64_t at) const {
    return betweenRequests() && !versions_.empty() &&
           (versions_.size() >= limits_.maxAhead || at - versions_.front().start >= limits_.maxAheadBytes);
  }
  bool requestLineByte(char c);
  bool headerLineByte(char c);
  bool chunkSizeByte(char c);
  bool endOfRequestLine();
  bool endOfHeaderLine();
  void endOfHead();
  void endOfRequest();

  HttpHeadLimits limits_;
  State state_ = State::RequestLine;
  std::optional<FramingRefusal> refusal_;
  std::string line_;       // the line being read (request, header or chunk size line), without its line end
  bool cr_ = false;        // the last byte was a CR: only LF may follow
  size_t headBytes_ = 0, headerLines_ = 0, heads_ = 0;
  size_t spaces_ = 0, partStart_ = 0;  // in the request line: spaces so far, where the target or version starts
  int contentLengths_ = 0, transferEncodings_ = 0, authorizations_ = 0, contentTypes_ = 0;
  std::string contentLength_, transferEncoding_;
  uint64_t remaining_ = 0;  // of a fixed body or a chunk's data
  uint64_t chunkSize_ = 0;
  int chunkDigits_ = 0;     // significant hex digits so far
  struct Ahead {
    bool http10;     // its request line said HTTP/1.0
    uint64_t start;  // where it began, in bytes passed
  };
  std::deque<Ahead> versions_;  // per request line read and not yet taken
  uint64_t passed_ = 0;         // bytes passed on so far
  uint64_t requestStart_ = 0;   // where the request being read began
  bool askedClose_ = false, askedKeepAlive_ = false;  // this head's Connection list so far
  bool closing_ = false;       // the request being read asked to close
};

// Whether a Connection header's list (`a, b`) has `token`: items without the spaces around them,
// any case. Both RequestFraming and the control API's close decision read it so.
bool connectionListHas(std::string_view list, std::string_view token);

// Keys of /v1/state/{key}: [A-Za-z0-9_.:/-], 1 to 128 bytes, not starting with '.', '-' or '/'.
// Approval ids: [A-Za-z0-9_-], 1 to 64 bytes.
bool isValidApprovalId(const std::string& id);

// Percent-decoding of one path segment or query item ('+' is a space only in queries).
// nullopt on a malformed escape.
std::optional<std::string> percentDecode(const std::string& s, bool plusIsSpace);

// Constant-time comparison (CRYPTO_memcmp) of equal-length strings; false when lengths differ.
bool tokenEquals(const std::string& a, const std::string& b);

}  // namespace pine
