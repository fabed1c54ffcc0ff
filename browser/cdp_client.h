// A DevTools protocol session over Chromium's pipe: commands with ids, each answer matched to
// its command by a reader thread; events are dropped (pine-browser polls the page instead).
// Everything Chromium sends is parsed as a stranger's bytes (cdp_framing.h, JSON without throwing).
#pragma once
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace pine::browser {

struct CdpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class CdpClient {
 public:
  CdpClient(int commands, int events);
  ~CdpClient();
  // The command's result; throws CdpError with Chromium's message, or when it timed out or
  // Chromium has gone.
  nlohmann::json call(const std::string& method, nlohmann::json params = nlohmann::json::object(),
                      const std::string& session = "", int timeoutMs = 30000);

 private:
  void readLoop();

  int commands_, events_;
  std::mutex mu_;
  std::mutex writing_;  // apart from mu_: a blocked write must not stop the reader
  std::condition_variable cv_;
  std::map<long long, nlohmann::json> answers_;
  long long nextId_ = 1;
  bool gone_ = false;
  std::thread reader_;
};

}  // namespace pine::browser
