// Single events without kj-http. A connection starts here: each request that is a
// plain POST /v1/events (plain_event_request.h), arrived whole and passing every check the routed
// path makes, is published and answered here, one at a time; the first request that is anything
// else, arrived in pieces, or would be refused, goes with every byte after it to kj-http
// (serveHttp), which serves the connection from then on and answers it as before. So this path
// never refuses and never logs a refusal: it only serves what kj-http would have served the same.
#include <kj/debug.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "broker/control_api.h"
#include "broker/forwarding_stream.h"
#include "broker/http_status.h"
#include "broker/plain_event_request.h"
#include "common/json_depth.h"
#include "common/log.h"
#include "common/outside_json.h"

namespace pine {

namespace {

using json = nlohmann::json;

// One read's worth: a plain request is a few hundred bytes; one that does not fit goes to kj-http.
constexpr size_t kReadSize = 16384;

// The answer as sendReply() has kj-http write it: the same status line, fields and body.
std::string answerText(ApiReply reply) {
  if (reply.status < 100 || reply.status > 599) reply.status = 500;
  // Bytes that are not UTF-8 in a message (an exception's text) are replaced, not thrown on.
  std::string body = reply.text.empty() ? reply.body.dump(-1, ' ', false, json::error_handler_t::replace)
                                        : std::move(reply.text);
  // Written into one string: this runs for every single event.
  std::string out;
  out.reserve(body.size() + 128);
  out += "HTTP/1.1 ";
  out += std::to_string(reply.status);
  out += ' ';
  out += statusText((unsigned)reply.status);
  out += "\r\nContent-Length: ";
  out += std::to_string(body.size() + 1);  // and the newline after it
  out += "\r\nContent-Type: application/json\r\n";
  if (reply.retryAfterSec > 0) out += "Retry-After: " + std::to_string(reply.retryAfterSec) + "\r\n";
  out += "\r\n";
  out += body;
  out += '\n';
  return out;
}

}  // namespace

struct ControlApi::PlainConnection : ControlApi::Evictable {
  PlainConnection(kj::Own<kj::AsyncIoStream> s, ReturningSenders& returning) : stream(kj::mv(s)), sender(returning) {}
  kj::Own<kj::AsyncIoStream> stream;  // null once kj-http has it
  ReturningSenders::Sender sender;    // answered, until its next request arrives
  std::string in;                     // read, not yet served
  bool waiting = true;                // for its next request's first bytes, since `since`
  bool timedOut = false;              // idleWatch ended it: bytes read in the same turn are not served
  kj::Array<kj::byte> chunk = kj::heapArray<kj::byte>(kReadSize);
};

kj::Promise<void> ControlApi::servePlain(kj::Own<kj::AsyncIoStream> connection, Endpoint& endpoint) {
  auto c = kj::heap<PlainConnection>(kj::mv(connection), returning_);
  auto& conn = *c;
  conn.since = io_.provider->getTimer().now();
  auto serving = nextPlain(conn, endpoint).exclusiveJoin(idleWatch(conn, conn.since + limits_.headerTimeout));
  if (endpoint.kind == ApiListener::Unix) return serving.attach(kj::mv(c));  // the owner's, by its peer
  // TCP: it takes part in making room, as kj-http's connections do, until kj-http has it.
  return untilEvicted(conn, kj::mv(serving)).attach(kj::mv(c));
}

kj::Promise<void> ControlApi::idleWatch(PlainConnection& c, kj::TimePoint at) {
  // One timer a connection, moved on when it fires early, rather than a timer a request (about 3 %
  // of the broker's time under single events).
  auto& timer = io_.provider->getTimer();
  return timer.atTime(at).then([this, &c, &timer]() -> kj::Promise<void> {
    ++idleWakes_;
    if (!c.stream) return kj::NEVER_DONE;  // kj-http has the connection, and its own timeouts
    auto now = timer.now();
    if (c.waiting && now - c.since >= limits_.headerTimeout) {
      // Ends it. A read that completed in this same turn may still run before the join drops it:
      // it must not publish an event whose answer would never be written.
      c.timedOut = true;
      return kj::READY_NOW;
    }
    // Waiting since more recently: from then. Being served: the wait has not begun, and cannot end
    // before the timeout from now (a time already past would fire at once, again and again).
    return idleWatch(c, c.waiting ? c.since + limits_.headerTimeout : now + limits_.headerTimeout);
  });
}

kj::Promise<void> ControlApi::handOver(PlainConnection& c, Endpoint& endpoint) {
  if (c.evicted) return kj::READY_NOW;  // closed to make room: not counted again as kj-http's
  returning_.cameBack(c.sender);
  c.leave();          // kj-http's LimitedConnection makes room from now on
  c.chunk = nullptr;  // kj-http reads into its own buffer from now on
  return serveHttp(kj::heap<ReplayedStream>(kj::mv(c.stream), std::move(c.in)), endpoint);
}

kj::Promise<void> ControlApi::nextPlain(PlainConnection& c, Endpoint& endpoint) {
  if (c.in.empty()) {
    // Waits as long as kj-http waits for a next request (its pipeline timeout: idleWatch), then
    // the connection ends as kj-http ends it; a request that comes in pieces gets kj-http's header
    // timeout from the hand-over, as kj-http gives a next request from its first byte.
    c.waiting = true;
    return c.stream->tryRead(c.chunk.begin(), 1, c.chunk.size()).then([this, &c, &endpoint](size_t n) -> kj::Promise<void> {
      if (n == 0 || c.timedOut) return kj::READY_NOW;
      c.waiting = false;
      c.in.append(reinterpret_cast<const char*>(c.chunk.begin()), n);
      return nextPlain(c, endpoint);
    });
  }
  // Closed to make room (evictOne) while this was on its way: nothing more is served or published.
  if (c.evicted) return kj::READY_NOW;
  returning_.cameBack(c.sender);  // its next request is here (read with the last one, perhaps)
  PlainEventRequest req;
  // Not whole in what one read brought, or another request: kj-http's from here on.
  if (readPlainEventRequest(c.in, limits_.head, limits_.maxBody, &req) != PlainVerdict::Plain) return handOver(c, endpoint);
  // Every check handle() and withJsonBody() make; where one would refuse, kj-http answers it.
  std::optional<std::string> host;
  if (req.hasHost) host = std::string(req.host);
  ApiRequestFacts facts;
  facts.method = "POST";
  facts.path = "/v1/events";
  facts.authorization = std::string(req.authorization);
  std::optional<std::string> contentType;
  if (req.hasContentType) contentType = std::string(req.contentType);
  if (checkHost(host, endpoint.kind, endpoint.port) || checkApiRequest(facts, backend_.token()) ||
      checkContentType(contentType, true) || jsonNestingDepth(req.body) > kMaxApiBodyNesting)
    return handOver(c, endpoint);
  json body = parseOutsideJson(req.body);
  if (body.is_discarded() || !body.is_object()) return handOver(c, endpoint);
  c.in.erase(0, req.length);
  ++plainServed_;
  auto& timer = io_.provider->getTimer();
  c.kept = true;  // the owner's request, arrived whole: not closed to make room
  c.since = timer.now();
  struct Answer {
    std::string text;
    bool published;  // its sender counts as coming back only then, as on kj-http's path
  };
  // As few steps as the answer needs: this runs for every single event.
  return kj::evalNow([&]() { return backend_.publishEvent(body); })
      .then([](ApiReply reply) -> kj::Promise<Answer> { return Answer{answerText(kj::mv(reply)), true}; },
            [](kj::Exception&& e) -> kj::Promise<Answer> {
              // As handle() answers a backend that failed; a connection gone ends this one.
              if (e.getType() == kj::Exception::Type::DISCONNECTED) return kj::mv(e);
              spdlog::warn("control API: {}", e.getDescription().cStr());
              std::string why = std::string("the broker could not answer: ") + e.getDescription().cStr();
              return Answer{answerText(ApiReply{502, json{{"error", why}}}), false};
            })
      .then([this, &c, &endpoint, &timer](Answer answer) {
        auto text = kj::heap<std::string>(kj::mv(answer.text));
        auto written = c.stream->write(text->data(), text->size());
        return written.then([this, &c, &endpoint, &timer, text = kj::mv(text), published = answer.published]() {
          c.kept = false;  // waiting for its next request: it may make room again
          c.since = timer.now();
          if (published) returning_.answered(c.sender);
          return nextPlain(c, endpoint);
        });
      });
}

}  // namespace pine
