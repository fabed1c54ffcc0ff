// The owner's control API: HTTP/1.1 on the home's unix socket (mode 600, peer
// uid checked) with the bearer token from data/http-token. Routes are in
// docs/api.md.
#pragma once
#include <kj/async-io.h>
#include <kj/compat/http.h>
#include <kj/io.h>

#include <string>

namespace pine {

class Broker;

class ControlApi final : public kj::HttpService, private kj::TaskSet::ErrorHandler {
 public:
  ControlApi(kj::AsyncIoContext& io, Broker& broker);
  ~ControlApi() noexcept(false);

  // Binds `path` (replacing a stale socket), mode 600, and starts accepting.
  void listenUnix(const std::string& path);

  kj::Promise<void> request(kj::HttpMethod method, kj::StringPtr url, const kj::HttpHeaders& headers,
                            kj::AsyncInputStream& requestBody, Response& response) override;

 private:
  kj::Promise<void> acceptLoop(kj::ConnectionReceiver& receiver);
  kj::Promise<void> route(kj::HttpMethod method, std::string path, const kj::HttpHeaders& headers,
                          kj::AsyncInputStream& body, Response& response);
  kj::Promise<void> sendJson(Response& response, unsigned status, const std::string& body);
  void taskFailed(kj::Exception&& e) override;

  kj::AsyncIoContext& io_;
  Broker& broker_;
  kj::Own<kj::HttpHeaderTable> table_;
  kj::HttpHeaderId hAuthorization_, hOrigin_, hSecFetchSite_, hContentType_;
  kj::Own<kj::HttpServer> server_;
  kj::Own<kj::ConnectionReceiver> unixReceiver_;
  kj::TaskSet tasks_;
};

}  // namespace pine
