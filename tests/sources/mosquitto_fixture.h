// A real mosquitto per test (optionally with a password file and a TLS listener whose
// certificate is made at test time with OpenSSL), a plain client to publish and listen
// with, pine-mqtt connectors started as pined starts them (the job from the supervisor's
// own mqttJobFor), and a KJ loop that collects the drafts a SourceManager hands on.
#pragma once
#include <kj/async-io.h>
#include <spdlog/spdlog.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "broker/sources/source_manager.h"
#include "supervisor/secrets/secret_store.h"
#include "tests/sources/log_capture.h"

struct mosquitto;
struct mosquitto_message;

namespace sources_test {

using pine::test::LogCapture;

// In `dir`: ca.crt/ca.key, server.crt/server.key signed by it for 127.0.0.1 and localhost, and
// other-ca.crt/other-ca.key, a second CA that signed nothing.
void makeCertificates(const std::string& dir);

struct MosquittoOptions {
  std::string user, password;  // both set: allow_anonymous false and a password file with this login
  bool tls = false;            // also a TLS listener (tlsPort()), its certificate signed by caFile()
  // No per-subscriber queue limit (mosquitto's default drops past 1000 queued messages): a test
  // that floods a slow subscriber then meets the subscriber's own limits, not mosquitto's.
  bool unboundedQueues = false;
};

class Mosquitto {
 public:
  explicit Mosquitto(MosquittoOptions options = {});  // picks free ports and starts it
  ~Mosquitto();  // stops it, removes its folder
  void stop();
  void kill();   // SIGKILL: no goodbye to its clients
  void start();  // again, on the same ports
  int port() const { return port_; }
  int tlsPort() const { return tlsPort_; }
  pid_t pid() const { return pid_; }  // -1 while stopped
  std::string url() const { return "mqtt://127.0.0.1:" + std::to_string(port_); }
  std::string tlsUrl(const std::string& host = "127.0.0.1") const {
    return "mqtts://" + host + ":" + std::to_string(tlsPort_);
  }
  std::string caFile() const { return dir_ + "/ca.crt"; }          // signed the server's certificate
  std::string otherCaFile() const { return dir_ + "/other-ca.crt"; }  // signed nothing of this server's
  const std::string& dir() const { return dir_; }

 private:
  MosquittoOptions options_;
  std::string dir_;
  int port_ = 0, tlsPort_ = 0;
  pid_t pid_ = -1;
};

// A plain libmosquitto client on its own thread: publishes, and records what it hears.
class Client {
 public:
  explicit Client(int port, std::vector<std::string> subscribe = {}, const std::string& user = "",
                  const std::string& password = "");
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
    // Committed at once, as a store that keeps up would (an mqtt source sends its next message then).
    return [this](pine::sources::Draft d) {
      if (d.committed) std::exchange(d.committed, nullptr)();
      drafts.push_back(std::move(d));
    };
  }
  void run(std::chrono::milliseconds ms);  // turns the loop for this long
  // Turns the loop until `done` or the timeout; true when done.
  bool until(const std::function<bool()>& done, std::chrono::milliseconds timeout);
};

// For managers that run no mqtt source: a start fails, saying so.
pine::sources::OpenConnector noConnectors();

// Starts pine-mqtt (PINE_BIN_DIR) as pined does, without pined's sandbox: the job from
// pine::mqttJobFor with the values of a .env of the test's own, fast reconnects.
class Connectors {
 public:
  Connectors();
  ~Connectors();  // waits for (or ends) every connector it started
  void setSecret(const std::string& name, const std::string& value);
  pine::sources::OpenConnector opener(kj::AsyncIoContext& io);
  std::vector<pid_t> pids() const { return pids_; }

 private:
  std::string dir_;
  std::unique_ptr<pine::secrets::SecretStore> store_;
  std::vector<pid_t> pids_;
};

// Fast restarts of a connector that ended (200 ms doubling to 1 s).
inline pine::sources::Options fast() {
  pine::sources::Options o;
  o.restart = {200, 1000};
  return o;
}

// A source of type mqtt on `url`.
pine::config::Source mqttSource(const std::string& name, const std::string& url, std::vector<std::string> topics,
                                std::vector<std::string> publish = {});

// A process's peak resident memory (VmHWM) in KiB, 0 when it cannot be read.
long peakKb(pid_t pid);

// The sanitizer build (ASan): its programs map terabytes of shadow memory and bound nothing by
// RLIMIT_DATA (mqtt/main.cpp), so a test of such a bound runs in the plain build only.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// Publishes `topic` every 200 ms until a draft on it arrives (the source has
// subscribed by then); true when it did.
bool waitSubscribed(Loop& loop, Client& client, const std::string& topic, std::chrono::milliseconds timeout);

}  // namespace sources_test
