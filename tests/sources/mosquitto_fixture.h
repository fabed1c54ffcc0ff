// A real mosquitto per test, a plain client to publish and listen with, and a
// KJ loop that collects the drafts a SourceManager hands on.
#pragma once
#include <kj/async-io.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "broker/sources/source_manager.h"

struct mosquitto;
struct mosquitto_message;

namespace sources_test {

class Mosquitto {
 public:
  Mosquitto();   // picks a free port and starts it
  ~Mosquitto();  // stops it, removes its folder
  void stop();
  void start();  // again, on the same port
  int port() const { return port_; }
  std::string url() const { return "mqtt://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A plain libmosquitto client on its own thread: publishes, and records what it hears.
class Client {
 public:
  explicit Client(int port, std::vector<std::string> subscribe = {});
  ~Client();
  void publish(const std::string& topic, const std::string& payload, bool retain = false);
  // Publishes and returns once mosquitto acknowledged it, so it has been routed to whoever
  // was subscribed at that moment (and to nobody who subscribes later). False on timeout.
  bool publishAcked(const std::string& topic, const std::string& payload, std::chrono::milliseconds timeout);
  std::vector<std::pair<std::string, std::string>> heard();  // (topic, payload) so far
  bool waitHeard(const std::function<bool(const std::string&, const std::string&)>& match,
                 std::chrono::milliseconds timeout);

 private:
  static void onMessage(struct mosquitto*, void*, const struct mosquitto_message*);
  static void onConnect(struct mosquitto*, void*, int);
  static void onPublish(struct mosquitto*, void*, int);
  struct mosquitto* mosq_ = nullptr;
  std::vector<std::string> topics_;
  std::mutex mu_;
  std::vector<std::pair<std::string, std::string>> heard_;
  std::vector<int> acked_;  // message ids mosquitto acknowledged
};

// The event loop and the drafts that reached the sink.
struct Loop {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  std::vector<pine::sources::Draft> drafts;
  pine::sources::Sink sink() {
    return [this](pine::sources::Draft d) { drafts.push_back(std::move(d)); };
  }
  void run(std::chrono::milliseconds ms);  // turns the loop for this long
  // Turns the loop until `done` or the timeout; true when done.
  bool until(const std::function<bool()>& done, std::chrono::milliseconds timeout);
};

// A source of type mqtt on `url`.
pine::config::Source mqttSource(const std::string& name, const std::string& url, std::vector<std::string> topics,
                                std::vector<std::string> publish = {});

// Publishes `topic` every 200 ms until a draft on it arrives (the source has
// subscribed by then); true when it did.
bool waitSubscribed(Loop& loop, Client& client, const std::string& topic, std::chrono::milliseconds timeout);

}  // namespace sources_test
