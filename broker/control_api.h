// The owner's control API: HTTP/1.1 on the home's unix socket (mode 600, peer
// uid checked) and on loopback TCP, with the bearer token from data/http-token.
// It does the HTTP side (owner checks from api_auth, body limits and timeouts,
// routing, SSE) and asks ApiBackend for everything else. Routes: docs/api.md. Webhooks
// (/hooks/<name>) skip the token: each hook carries its own secret (hook_intake.h).
#pragma once
#include <kj/async-io.h>
#include <kj/compat/http.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "broker/api_auth.h"
#include "broker/api_backend.h"
#include "broker/returning_senders.h"
#include "common/line_budget.h"

namespace pine {

// Defaults are the production values; tests shorten the timeouts.
struct ControlApiLimits {
  kj::Duration headerTimeout = 10 * kj::SECONDS;   // the whole request head, from the first byte
  kj::Duration bodyTimeout = 30 * kj::SECONDS;     // the whole body, from the end of the head
  kj::Duration keepalive = 15 * kj::SECONDS;       // ": keepalive" on a quiet SSE stream
  uint64_t maxBody = 1 << 20;                      // 1 MB
  size_t sseQueue = 1024;                          // notifications a slow SSE reader may fall behind
  size_t maxConnections = 256;                     // open at once, both listeners; then evictOne, else 503
  HttpHeadLimits head;                             // request line, header lines, whole head (431, 414)
  kj::Duration senderReturn = kj::MILLISECONDS;    // how long an answered event's sender counts as coming back
  bool plainEvents = true;  // plain single events are served without kj-http (plain_events.cpp)
};

class ControlApi final : private kj::TaskSet::ErrorHandler,
                         private kj::HttpServerErrorHandler,
                         private kj::HttpServerCallbacks {
 public:
  ControlApi(kj::AsyncIoContext& io, ApiBackend& backend, ControlApiLimits limits = {});
  ~ControlApi() noexcept(false);
  KJ_DISALLOW_COPY(ControlApi);

  // Binds `path` (replacing a stale socket), mode 600, and accepts the peers checkPeer() admits: for
  // tests and the fuzz target. The broker pined runs serves pine.sock through serveHandedOver().
  void listenUnix(const std::string& path);
  // pine.sock as pined runs it: pined listens and checks each peer, then hands the connection
  // over (serveHandedOverConnection, which owns fd). `path` is only reported by apiInfo().
  void serveHandedOver(const std::string& path);
  void serveHandedOverConnection(int fd);
  // Binds host:port (port 0: any free one) and starts accepting. Returns the bound port, which the
  // Host check then requires. Throws when host is not a loopback address: the API is plain HTTP.
  int listenTcp(const std::string& host, int port);
  // Why the TCP listener is not there (a port in use): GET /v1/status says it as api.httpProblem.
  void setTcpProblem(std::string why) { tcpProblem_ = std::move(why); }

  // {"unix": path, "http": {"host", "port"}} (null where not listening): added to GET /v1/status.
  nlohmann::json apiInfo() const;

  // Serves HTTP on a connection as if it had been accepted on that listener (which must be
  // listening), after the peer checks: what acceptLoop does, and the fuzz target's way in.
  kj::Promise<void> serve(kj::Own<kj::AsyncIoStream> connection, ApiListener listener);

  // Connections whose event (POST /v1/events, a webhook) was answered moments ago and that have
  // not sent again: the event bus waits for them (returning_senders.h).
  size_t returningSenders() { return returning_.count(); }
  // Requests served as plain single events (plain_events.cpp), for the tests that compare both ways.
  unsigned long long plainEventsServed() const { return plainServed_; }
  // How often a plain connection's idle watch has woken, for the test that it does not spin.
  unsigned long long idleWatchWakes() const { return idleWakes_; }
  // Reads of which part waited: too many requests were ahead of their answers (LimitedConnection).
  unsigned long long heldReads() const { return heldReads_; }

 private:
  class Endpoint;
  class ConnectionService;
  class LimitedConnection;
  struct BodyResult;
  struct PlainConnection;
  // A TCP connection that may be closed to make room (evictOne): a LimitedConnection, or a
  // PlainConnection before kj-http has it. Since when it waits in its present state (accepted, or
  // its request began or ended), whether it is kept (it serves the owner's request now, or a
  // webhook delivery that has arrived whole), and how to close it.
  class Evictable {
   public:
    Evictable() = default;
    Evictable(const Evictable&) = delete;
    Evictable& operator=(const Evictable&) = delete;
    ~Evictable() noexcept(false);
    kj::TimePoint since = kj::origin<kj::TimePoint>();
    bool kept = false;
    bool evicted = false;
    kj::Own<kj::PromiseFulfiller<void>> close;
    void evictableIn(std::set<Evictable*>& set, size_t& evicting);
    void leave();  // handed on: no longer closed to make room as this (evicted counts until gone)

   private:
    std::set<Evictable*>* set_ = nullptr;
    size_t* evicting_ = nullptr;
  };

  kj::Promise<void> acceptLoop(kj::ConnectionReceiver& receiver, Endpoint& endpoint);
  kj::Promise<void> refuseBusy(kj::Own<kj::AsyncIoStream> connection);
  // kj-http serving a connection (its socket read through ReadyReads already).
  kj::Promise<void> serveHttp(kj::Own<kj::AsyncIoStream> connection, Endpoint& endpoint);
  // plain_events.cpp: a connection's plain single events, until its first other request, from
  // which on serveHttp() has it (with the bytes read so far).
  kj::Promise<void> servePlain(kj::Own<kj::AsyncIoStream> connection, Endpoint& endpoint);
  kj::Promise<void> nextPlain(PlainConnection& c, Endpoint& endpoint);
  // Resolves (ending the connection) once it has waited headerTimeout for its next request.
  kj::Promise<void> idleWatch(PlainConnection& c, kj::TimePoint at);
  kj::Promise<void> handOver(PlainConnection& c, Endpoint& endpoint);
  // A TCP connection's promise, ended when evictOne() closes it (its `close` is set here).
  kj::Promise<void> untilEvicted(Evictable& c, kj::Promise<void> serving);
  // Closes the TCP connection that has waited longest and is not kept (an idle one, or a request
  // whose head or body is still coming; kept: the owner's request, or a webhook delivery that has
  // arrived whole); false when there is none.
  bool evictOne();
  kj::Promise<void> handle(Endpoint& endpoint, LimitedConnection* connection, kj::HttpMethod method, kj::StringPtr url,
                           const kj::HttpHeaders& headers, kj::AsyncInputStream& body,
                           kj::HttpService::Response& response);
  kj::Promise<void> route(kj::HttpMethod method, const std::vector<std::string>& seg, const ApiQuery& query,
                          const kj::HttpHeaders& headers, kj::AsyncInputStream& body,
                          kj::HttpService::Response& response);
  // Reads a JSON object body under the route's limit and the body timeout, then calls `then`.
  using JsonHandler = kj::Function<kj::Promise<void>(nlohmann::json)>;
  kj::Promise<void> withJsonBody(const kj::HttpHeaders& headers, kj::AsyncInputStream& body, uint64_t limit,
                                 bool emptyIsObject, kj::HttpService::Response& response, JsonHandler then);
  // `declared`: the Content-Length (nullopt for a chunked body).
  kj::Promise<BodyResult> readBody(kj::AsyncInputStream& body, uint64_t limit, std::optional<uint64_t> declared);
  kj::Promise<void> postMessage(const std::string& agent, nlohmann::json body, const kj::HttpHeaders& headers,
                                kj::HttpService::Response& response);
  kj::Promise<void> eventStream(const ApiQuery& query, const kj::HttpHeaders& headers,
                                kj::HttpService::Response& response);

  kj::Promise<void> sendJson(kj::HttpService::Response& response, unsigned status, const nlohmann::json& body,
                             int retryAfterSec = 0);
  // The same for a body that is JSON text already.
  kj::Promise<void> sendText(kj::HttpService::Response& response, unsigned status, std::string text,
                             int retryAfterSec = 0);
  // POST /hooks/<name>: no control token; the backend checks the hook's own secret.
  kj::Promise<void> hookRequest(LimitedConnection* connection, kj::HttpMethod method, const std::string& name,
                                const kj::HttpHeaders& headers, kj::AsyncInputStream& body,
                                kj::HttpService::Response& response);
  kj::Promise<void> sendReply(kj::HttpService::Response& response, ApiReply reply);
  kj::Promise<void> sendError(kj::HttpService::Response& response, unsigned status, const std::string& message);
  kj::Promise<void> sendClosingError(kj::HttpService::Response& response, unsigned status, const std::string& message);
  kj::Own<kj::AsyncOutputStream> startSse(kj::HttpService::Response& response);

  void taskFailed(kj::Exception&& e) override;
  kj::Promise<void> handleApplicationError(kj::Exception exception,
                                           kj::Maybe<kj::HttpService::Response&> response) override;
  kj::Promise<void> handleClientProtocolError(kj::HttpHeaders::ProtocolError error,
                                              kj::HttpService::Response& response) override;
  // kj-http asks as it writes an answer's head: true while the answer of a connection that ends
  // after it is being started (closingAnswer_), so that the head says Connection: close.
  bool shouldClose() override { return closingAnswer_; }

  kj::AsyncIoContext& io_;
  ApiBackend& backend_;
  ControlApiLimits limits_;
  kj::Own<kj::HttpHeaderTable> table_;
  kj::HttpHeaderId hAuthorization_, hOrigin_, hSecFetchSite_, hContentType_, hAccept_, hLastEventId_,
      hCacheControl_, hRetryAfter_;
  std::string unixPath_, tcpHost_;
  int tcpPort_ = 0;
  size_t connections_ = 0;  // being served now (maxConnections)
  // TCP connections that may be closed to make room when all are taken: every one but those
  // serving the owner's request or a whole webhook delivery now (LimitedConnection::kept).
  // evicting_: closed, not yet gone.
  std::set<Evictable*> tcpConnections_;
  size_t evicting_ = 0;
  bool busyWarned_ = false;
  bool closingAnswer_ = false;  // see shouldClose()
  LineBudget refusalsLogged_{60};  // refused requests in the log, a minute (the rest counted)
  std::string tcpProblem_;
  ReturningSenders returning_;  // before the connections, which leave it when they end
  unsigned long long plainServed_ = 0;
  unsigned long long idleWakes_ = 0;
  unsigned long long heldReads_ = 0;
  // One HttpServer per listener, so a request knows which socket it came in on.
  kj::Own<Endpoint> unixEndpoint_, tcpEndpoint_;
  kj::Own<kj::ConnectionReceiver> unixReceiver_, tcpReceiver_;
  kj::TaskSet tasks_;  // last: cancelled first on destruction
};

}  // namespace pine
