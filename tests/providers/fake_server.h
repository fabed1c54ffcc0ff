// A plain-HTTP model server on loopback for the provider tests: it answers each request
// with the next queued reply, sent in the given pieces (a pause between them so they
// arrive as separate reads), chunked or closed-delimited, optionally cut short.
#pragma once
#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace pine::model::test {

struct FakeReply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers{{"Content-Type", "text/event-stream"}};
  std::vector<std::string> pieces;
  bool chunked = true;   // false: no length, the body ends when the connection closes
  bool cut = false;      // chunked only: close without the last chunk (a broken transfer)
};

struct ReceivedRequest {
  std::string head;  // request line and headers
  std::string body;
};

class FakeServer {
 public:
  FakeServer();
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  void enqueue(FakeReply reply);
  std::string baseUrl() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<ReceivedRequest> requests() const;

 private:
  void loop();
  void serve(int fd);

  int listenFd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::deque<FakeReply> replies_;
  std::vector<ReceivedRequest> requests_;
  std::thread thread_;
};

// Splits text at the given byte offsets (ascending, each inside the text).
std::vector<std::string> splitAt(const std::string& text, std::vector<std::size_t> offsets);

}  // namespace pine::model::test
