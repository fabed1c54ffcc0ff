// A plain-HTTP server on 127.0.0.1 for the `http` source tests: each request is answered by
// the handler the test sets (so it can check If-None-Match, change the page, redirect), and
// every request's head is kept, so a test can see what reached which server (the token).
#pragma once
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace pine::sources::test {

struct PageRequest {
  std::string path;  // the request target
  std::string head;  // request line and headers, as received
  std::string header(const std::string& name) const;  // "" when absent; name without case
};

struct PageReply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

class PageServer {
 public:
  explicit PageServer(std::function<PageReply(const PageRequest&)> handler);
  ~PageServer();
  PageServer(const PageServer&) = delete;
  PageServer& operator=(const PageServer&) = delete;

  int port() const { return port_; }
  void setHandler(std::function<PageReply(const PageRequest&)> handler);
  std::vector<PageRequest> requests() const;

 private:
  void loop();
  void serve(int fd);

  int listenFd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::function<PageReply(const PageRequest&)> handler_;
  std::vector<PageRequest> requests_;
  std::thread thread_;
};

}  // namespace pine::sources::test
