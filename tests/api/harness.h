// The control API's test bench: a FakeBackend implementing ApiBackend, a real
// ControlApi on loopback TCP and a unix socket with its KJ event loop on a
// thread of its own, and a raw socket client for requests no polite client sends.
#pragma once
#include <kj/async-io.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "broker/api_backend.h"
#include "broker/control_api.h"
#include "broker/feed.h"

namespace pine::apitest {

using json = nlohmann::json;

// Remembers what it was asked (calls), answers from small in-memory tables.
class FakeBackend final : public ApiBackend {
 public:
  std::string tok = "tok-0123456789abcdef0123456789abcdef";
  Feed feedObj;
  std::vector<json> events;
  std::map<std::string, json> state;
  std::vector<std::string> calls;  // "route arg..." in order
  std::map<std::string, json> finished;  // task id -> record
  std::map<std::string, std::vector<kj::Own<kj::PromiseFulfiller<ApiReply>>>> waiters;
  std::vector<kj::Own<kj::PromiseFulfiller<ApiReply>>> held;  // events on hold/backend, not yet answered
  int tasksStarted = 0;

  const std::string& token() const override { return tok; }
  kj::Promise<ApiReply> status() override;
  kj::Promise<ApiReply> reload() override;
  ApiReply tasks(const ApiQuery& query) override;
  ApiReply task(const std::string& id) override;
  ApiReply listEvents(const ApiQuery& query) override;
  kj::Promise<ApiReply> publishEvent(const json& body) override;
  ApiReply agents() override;
  ApiReply sendMessage(const std::string& agent, const json& body) override;
  kj::Promise<ApiReply> taskResult(const std::string& taskId) override;
  ApiReply resetAgent(const std::string& agent, const json& body) override;
  ApiReply setMode(const std::string& agent, const json& body) override;
  ApiReply approvals(const ApiQuery& query) override;
  ApiReply approve(const std::string& id, bool always) override;
  ApiReply deny(const std::string& id) override;
  ApiReply cancelTask(const std::string& id) override;
  ApiReply schedules() override;
  ApiReply getState(const std::string& key) override;
  ApiReply putState(const std::string& key, const json& body) override;
  Feed& feed() override { return feedObj; }
  // One hook, "gh", capped at 64 bytes: it records what arrived and answers 202, or 429 on "flood";
  // on "hold" it answers 202 once the test calls commitHeldHooks (a commit that takes a while).
  uint64_t hookBodyLimit(const std::string& name) override { return name == "gh" ? 64 : 0; }
  kj::Promise<ApiReply> hook(const std::string& name, HookDelivery d) override;
  std::vector<std::pair<std::string, HookDelivery>> hooks;
  std::vector<kj::Own<kj::PromiseFulfiller<ApiReply>>> heldHooks;
  void commitHeldHooks();

  // Test-side actions (call through ApiServer::run).
  json addEvent(const std::string& topic, const json& payload);  // stored and published
  void finishTask(const std::string& id, const std::string& state, const std::string& answerOrError);
};

// A ControlApi with a FakeBackend, listening on 127.0.0.1:<any> and <dir>/pine.sock.
class ApiServer {
 public:
  explicit ApiServer(ControlApiLimits limits = testLimits());
  ~ApiServer();

  static ControlApiLimits testLimits();  // short timeouts so that slow-client tests are quick

  int port() const { return port_; }
  const std::string& home() const { return home_; }  // has data/http-token and pine.sock
  std::string socketPath() const { return home_ + "/pine.sock"; }
  std::string token() const { return token_; }

  // Runs fn on the event loop's thread and waits for it.
  void run(const std::function<void(FakeBackend&)>& fn);
  std::vector<std::string> calls();
  // ControlApi::returningSenders(), asked on the event loop's thread.
  size_t returningSenders();
  unsigned long long plainEventsServed();  // ControlApi::plainEventsServed()
  unsigned long long idleWatchWakes();     // ControlApi::idleWatchWakes()
  unsigned long long heldReads();          // ControlApi::heldReads()

 private:
  void loop(ControlApiLimits limits);
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  const kj::Executor* executor_ = nullptr;
  kj::Own<kj::PromiseFulfiller<void>> stop_;
  FakeBackend* backend_ = nullptr;
  ControlApi* api_ = nullptr;
  int port_ = 0;
  std::string home_, token_;
  std::string startError_;
};

// A blocking socket client that sends exactly the bytes it is given.
class RawConn {
 public:
  static RawConn tcp(int port);
  static RawConn unixSocket(const std::string& path);
  RawConn(RawConn&& o) noexcept : fd_(o.fd_), buf_(std::move(o.buf_)), eof_(o.eof_) { o.fd_ = -1; }
  RawConn& operator=(RawConn&& o) noexcept;
  ~RawConn();

  bool send(const std::string& bytes);  // false when the server has closed
  void shutdownWrite();                 // says "no more requests" (the server answers those it has, then closes)
  // Reads until `until` is in what arrived, the peer closes, or the time runs out. Returns all received so far.
  std::string readUntil(const std::string& until, std::chrono::milliseconds timeout = std::chrono::milliseconds(3000));
  // Reads until a whole HTTP response has arrived (or close, or timeout).
  std::string readResponse(std::chrono::milliseconds timeout = std::chrono::milliseconds(3000));
  // True when the server closes the connection within the time.
  bool closedWithin(std::chrono::milliseconds timeout);
  const std::string& received() const { return buf_; }

 private:
  explicit RawConn(int fd) : fd_(fd) {}
  bool readSome(std::chrono::steady_clock::time_point deadline);
  int fd_;
  std::string buf_;
  bool eof_ = false;
};

struct Resp {
  int status = 0;
  std::string head;  // status line and headers, lower-cased
  std::string body;
  json j;            // body as JSON (discarded when not)
};
Resp parse(const std::string& raw);

// A well-formed request to the TCP listener, with Host and token unless given in `headers`.
std::string request(const ApiServer& s, const std::string& method, const std::string& target,
                    const std::string& body = "", const std::vector<std::string>& headers = {},
                    bool withHost = true, bool withToken = true);
// Sends it over a new connection and reads the response.
// `timeout`: for an answer; the sanitizer build beside other suites takes seconds over a body of megabytes.
Resp roundTrip(const ApiServer& s, const std::string& rawRequest,
               std::chrono::milliseconds timeout = std::chrono::milliseconds(3000));
Resp call(const ApiServer& s, const std::string& method, const std::string& target, const std::string& body = "",
          const std::vector<std::string>& headers = {});

}  // namespace pine::apitest
