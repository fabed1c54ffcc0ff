// The control API's request head checks, on any bytes a client may send: RequestFraming alone
// (the same verdict however the bytes are split, at most one line kept), the plain single-event
// reader (what it takes, RequestFraming passes as one whole request; the same answers with it on
// and off, byte for byte), and the whole server
// (ControlApi over an in-memory pipe, as if on pine.sock) answering them: every response well
// formed with a status, every error a JSON {"error"}, a complete head always answered, a head
// RequestFraming refuses answered with that status as the last word before the connection ends.
#include <kj/async-io.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "broker/api_auth.h"
#include "broker/api_backend.h"
#include "broker/control_api.h"
#include "broker/feed.h"
#include "broker/plain_event_request.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using json = nlohmann::json;
using pine::ApiQuery;
using pine::ApiReply;

// Answers every route at once, so that nothing but the HTTP side is exercised.
class StubBackend final : public pine::ApiBackend {
 public:
  const std::string& token() const override { return token_; }
  const std::string token_ = "fuzz-token-0123456789abcdef";
  kj::Promise<ApiReply> status() override { return ApiReply{200, json{{"ok", true}}}; }
  kj::Promise<ApiReply> reload() override { return ApiReply{200, json{{"ok", true}}}; }
  ApiReply tasks(const ApiQuery&) override { return {200, json{{"tasks", json::array()}}}; }
  ApiReply task(const std::string&) override { return {404, json{{"error", "no task"}}}; }
  ApiReply listEvents(const ApiQuery&) override { return {200, json{{"events", json::array()}}}; }
  kj::Promise<ApiReply> publishEvent(const json&) override { return ApiReply{200, json{{"ok", true}}}; }
  ApiReply agents() override { return {200, json{{"agents", json::array()}}}; }
  ApiReply sendMessage(const std::string&, const json&) override { return {200, json{{"task", "t1"}}}; }
  kj::Promise<ApiReply> taskResult(const std::string&) override { return ApiReply{200, json{{"state", "done"}}}; }
  ApiReply resetAgent(const std::string&, const json&) override { return {200, json{{"ok", true}}}; }
  ApiReply setMode(const std::string&, const json&) override { return {200, json{{"ok", true}}}; }
  ApiReply approvals(const ApiQuery&) override { return {200, json{{"approvals", json::array()}}}; }
  ApiReply approve(const std::string&, bool) override { return pine::apiError(404, "no such approval"); }
  ApiReply deny(const std::string&) override { return pine::apiError(404, "no such approval"); }
  ApiReply cancelTask(const std::string&) override { return pine::apiError(404, "no such task"); }
  ApiReply schedules() override { return {200, json{{"schedules", json::array()}}}; }
  ApiReply getState(const std::string&) override { return pine::apiError(404, "no such state"); }
  ApiReply putState(const std::string&, const json&) override { return {200, json{{"ok", true}}}; }
  pine::Feed& feed() override { return feed_; }

 private:
  pine::Feed feed_;
};

// Small limits, so that inputs of a few hundred bytes reach each of them (and runs stay quick).
pine::HttpHeadLimits fuzzLimits() {
  pine::HttpHeadLimits l;
  l.maxTarget = 200;
  l.maxHeaderLine = 300;
  l.maxHeaderLines = 12;
  l.maxHead = 1200;
  return l;
}

struct Server {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  StubBackend backend;
  kj::Own<pine::ControlApi> api, kjOnly;  // kjOnly: the same, with no plain path (plain_events.cpp)
  Server() {
    spdlog::set_level(spdlog::level::off);  // refusals are logged; thousands a second would drown the run
    static std::string dir;
    char tmpl[] = "/tmp/pine-fuzz-http-XXXXXX";
    FUZZ_CHECK(mkdtemp(tmpl) != nullptr, "a temporary folder for the socket");
    dir = tmpl;
    atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    });
    pine::ControlApiLimits limits;
    limits.head = fuzzLimits();
    api = kj::heap<pine::ControlApi>(io, backend, limits);
    api->listenUnix(dir + "/pine.sock");  // serve() needs the listener; connections come over pipes
    limits.plainEvents = false;
    kjOnly = kj::heap<pine::ControlApi>(io, backend, limits);
    kjOnly->serveHandedOver(dir + "/pine.sock");  // the same path in GET /v1/status, not bound twice
  }
};

// Piece sizes for the input, from a hash of it: the same input is always split the same way,
// and the input's bytes are all request (seeds stay readable).
std::vector<size_t> pieces(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ull;
  std::vector<size_t> out;
  for (size_t at = 0; at < size;) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    size_t n = std::min<size_t>(size - at, (h >> 33) % 3 == 0 ? 1 + (h >> 40) % 8 : 1 + (h >> 40) % 700);
    out.push_back(n);
    at += n;
  }
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = (char)tolower((unsigned char)c);
  return s;
}

struct Answers {
  int count = 0;
  int lastStatus = 0;
  bool closing = false;    // the last response said Connection: close
  bool streaming = false;  // ended inside a text/event-stream, which never ends by itself
};

// The server's end of the pipe, counting what the server has read of the input.
class Counted final : public kj::AsyncIoStream {
 public:
  Counted(kj::Own<kj::AsyncIoStream> inner, size_t& read) : inner_(kj::mv(inner)), read_(read) {}
  kj::Promise<size_t> tryRead(void* buffer, size_t minBytes, size_t maxBytes) override {
    return inner_->tryRead(buffer, minBytes, maxBytes).then([this](size_t n) {
      read_ += n;
      return n;
    });
  }
  kj::Promise<void> write(const void* buffer, size_t size) override { return inner_->write(buffer, size); }
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override {
    return inner_->write(pieces);
  }
  kj::Promise<void> whenWriteDisconnected() override { return inner_->whenWriteDisconnected(); }
  void shutdownWrite() override { inner_->shutdownWrite(); }

 private:
  kj::Own<kj::AsyncIoStream> inner_;
  size_t& read_;
};

// Checks that `out` is a sequence of whole responses, each with a status, errors as JSON.
Answers parseResponses(const std::string& out) {
  Answers a;
  size_t pos = 0;
  while (pos < out.size()) {
    FUZZ_CHECK(out.compare(pos, 9, "HTTP/1.1 ") == 0, "each response starts with a status line");
    size_t end = out.find("\r\n\r\n", pos);
    FUZZ_CHECK(end != std::string::npos, "a response head is whole");
    std::string head = lower(out.substr(pos, end + 4 - pos));
    FUZZ_CHECK(head.size() > 12 && isdigit((unsigned char)head[9]) && isdigit((unsigned char)head[10]) &&
                   isdigit((unsigned char)head[11]) && head[12] == ' ',
               "a three-digit status");
    int status = std::stoi(head.substr(9, 3));
    FUZZ_CHECK(status >= 100 && status <= 599, "the status is an HTTP status");
    FUZZ_CHECK(!a.closing, "nothing is sent after a response that said Connection: close");
    a.closing = head.find("\r\nconnection: close\r\n") != std::string::npos;
    a.count++;
    a.lastStatus = status;
    pos = end + 4;
    if (head.find("\r\ntransfer-encoding: chunked\r\n") != std::string::npos) {
      FUZZ_CHECK(status == 200 && head.find("\r\ncontent-type: text/event-stream\r\n") != std::string::npos,
                 "only an event stream is sent chunked");
      a.streaming = true;
      return a;
    }
    size_t cl = head.find("\r\ncontent-length: ");
    FUZZ_CHECK(cl != std::string::npos, "a response that is not a stream has a Content-Length");
    size_t length = std::stoul(head.substr(cl + 18, 12));
    // A response to HEAD has the length but no body: the next bytes are the next status line.
    if (pos == out.size() || out.compare(pos, 9, "HTTP/1.1 ") == 0) continue;
    FUZZ_CHECK(out.size() - pos >= length, "the body is as long as its Content-Length says");
    if (status >= 400) {
      // As sendError and LimitedConnection write it; checked by hand, since a JSON parser here
      // would be most of the code each run covers (and so most of libFuzzer's time).
      std::string body = out.substr(pos, length);
      FUZZ_CHECK(body.size() >= 14 && body.compare(0, 10, "{\"error\":\"") == 0 &&
                     body.compare(body.size() - 3, 3, "\"}\n") == 0 && body.find("\n") == body.size() - 1,
                 "an error's body is {\"error\": what went wrong}");
    }
    pos += length;
  }
  return a;
}

// RequestFraming on its own: one call or many, the same verdict; never more than one line kept.
pine::RequestFraming frameAll(const uint8_t* data, size_t size, const std::vector<size_t>& split, size_t* passedOut) {
  const char* bytes = reinterpret_cast<const char*>(data);
  pine::RequestFraming whole(fuzzLimits());
  size_t passed = whole.scan(bytes, size);
  *passedOut = passed;
  FUZZ_CHECK(passed <= size, "scan passes on at most what it was given");
  FUZZ_CHECK(!whole.refusal() || passed < size, "a refusal stops scan short");
  FUZZ_CHECK(passed == size || whole.refusal() || whole.closed() || whole.full(),
             "scan stops short only when it refuses, after a request that asked to close, or with too "
             "many requests ahead");
  FUZZ_CHECK(!(whole.refusal() && whole.closed()), "a connection is closed or refused, not both");
  if (whole.refusal()) {
    int s = whole.refusal()->status;
    FUZZ_CHECK(s == 400 || s == 414 || s == 431, "a refusal is 400, 414 or 431");
    FUZZ_CHECK(!whole.refusal()->message.empty(), "a refusal says why");
    FUZZ_CHECK(whole.scan(bytes, size) == 0, "nothing passes after a refusal");
  }
  pine::HttpHeadLimits limits = fuzzLimits();
  pine::RequestFraming piecewise(limits);
  size_t at = 0, piecewisePassed = 0;
  for (size_t n : split) {
    size_t got = piecewise.scan(bytes + at, n);
    piecewisePassed += got;
    FUZZ_CHECK(piecewise.buffered() <= std::max(limits.maxHeaderLine, limits.maxTarget + 40),
               "at most one line, within the limits, is kept");
    at += n;
    if (got < n) break;
  }
  FUZZ_CHECK(piecewisePassed == passed, "the same bytes pass however they are split");
  FUZZ_CHECK(piecewise.heads() == whole.heads(), "the same heads are seen however the bytes are split");
  FUZZ_CHECK(piecewise.refusal().has_value() == whole.refusal().has_value(), "the same verdict however split");
  FUZZ_CHECK(piecewise.closed() == whole.closed(), "closed after the same request however split");
  if (whole.refusal()) {
    FUZZ_CHECK(piecewise.refusal()->status == whole.refusal()->status &&
                   piecewise.refusal()->message == whole.refusal()->message &&
                   piecewise.refusal()->inBody == whole.refusal()->inBody,
               "the same refusal however split");
  }
  return whole;
}

kj::Promise<void> writePieces(kj::AsyncIoStream& out, const char* data, std::vector<size_t> split, size_t i = 0) {
  if (i == split.size()) {
    out.shutdownWrite();
    return kj::READY_NOW;
  }
  return out.write(data, split[i]).then([&out, data, split = kj::mv(split), i]() mutable {
    size_t n = split[i];
    return writePieces(out, data + n, kj::mv(split), i + 1);
  });
}

kj::Promise<void> readAll(kj::AsyncIoStream& in, std::string& into, bool& ended) {
  auto buffer = kj::heapArray<char>(4096);
  auto p = in.tryRead(buffer.begin(), 1, buffer.size());
  return p.then([&in, &into, &ended, buffer = kj::mv(buffer)](size_t n) -> kj::Promise<void> {
    if (n == 0) {
      ended = true;
      return kj::READY_NOW;
    }
    into.append(buffer.begin(), n);
    FUZZ_CHECK(into.size() < (8u << 20), "the answers stay small");
    return readAll(in, into, ended);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Server* server = new Server;  // one for all inputs (never freed): setting it up is most of the cost
  auto split = pieces(data, size);
  size_t passed = 0;
  auto framing = frameAll(data, size, split, &passed);
  // What the plain path serves without kj-http is, to RequestFraming, one whole request of that length.
  pine::PlainEventRequest plain;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (pine::readPlainEventRequest(bytes, fuzzLimits(), pine::ControlApiLimits().maxBody, &plain) ==
      pine::PlainVerdict::Plain) {
    pine::RequestFraming one(fuzzLimits());
    FUZZ_CHECK(plain.length <= size && one.scan(bytes.data(), plain.length) == plain.length && !one.refusal() &&
                   one.heads() == 1 && one.betweenRequests(),
               "a plain request is one whole request that RequestFraming passes");
  }

  std::string out, kjOut;
  bool ended = false, kjEnded = false;
  size_t read = 0, kjRead = 0;
  auto talk = [&](pine::ControlApi& api, std::string& answers, bool& closed, size_t& consumed) {
    {
      auto pipe = kj::newTwoWayPipe();
      auto serving = api.serve(kj::heap<Counted>(kj::mv(pipe.ends[1]), consumed), pine::ApiListener::Unix)
                         .eagerlyEvaluate(nullptr);
      auto reading = readAll(*pipe.ends[0], answers, closed).eagerlyEvaluate(nullptr);
      auto writing = writePieces(*pipe.ends[0], reinterpret_cast<const char*>(data), split).eagerlyEvaluate(nullptr);
      server->io.waitScope.poll();  // runs until nothing is left to do but wait for a timer
    }  // everything still waiting (a stream, a body never finished) is cancelled here
    server->io.waitScope.poll();
  };
  talk(*server->api, out, ended, read);
  talk(*server->kjOnly, kjOut, kjEnded, kjRead);
  FUZZ_CHECK(out == kjOut && ended == kjEnded, "the same answers with the plain path on and off");

  Answers answers = parseResponses(out);
  bool headRefused = framing.refusal() && !framing.refusal()->inBody;
  if (framing.heads() > 0 || headRefused) FUZZ_CHECK(answers.count > 0, "a complete head is answered");
  FUZZ_CHECK(answers.count <= int(framing.heads()) + (headRefused ? 1 : 0), "no more answers than requests");
  if (answers.closing) FUZZ_CHECK(ended, "the connection ends after Connection: close");
  // A refused head is answered, last, unless the server closed (or streams) before reading that far.
  if (headRefused && read > passed && !answers.closing && !answers.streaming) {
    FUZZ_CHECK(answers.lastStatus == framing.refusal()->status, "a refused head gets the refusal's status, last");
    FUZZ_CHECK(ended, "the connection ends after a refused head");
  }
  return 0;
}
