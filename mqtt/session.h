// One MQTT session for one source, on a thread of its own: connects (TLS with the server's
// certificate and name verified when the address is mqtts://), logs in with the job's
// username and password, subscribes on every connect, and when the server goes away or
// refuses the login tries again after a wait that doubles up to a cap, with jitter. What
// it hears and every change of state go to the Handoff; publish() may be called from the
// event loop's thread at any time.
#pragma once
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "mqtt/handoff.h"
#include "mqtt/job/mqtt_job.h"

struct mosquitto;
struct mosquitto_message;
struct ssl_ctx_st;

namespace pine::mqtt {

inline constexpr size_t kMaxPayloadBytes = 256 * 1024;

// The wait before reconnect attempt `failures` (0 for the first): min doubled per failure up
// to max, then a random part of it taken off (half the wait at most), so that many sessions
// that lost the same server do not come back in step.
unsigned reconnectDelayMs(unsigned minMs, unsigned maxMs, unsigned failures, unsigned random);

// Why `topic` may not be published on under `patterns` (MQTT wildcards), or nullopt.
std::optional<std::string> publishProblem(const std::vector<std::string>& patterns, const std::string& topic);

class Session {
 public:
  Session(JobSpec job, Handoff& out);
  ~Session();  // stops the thread (politely disconnecting) and joins it
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Sets up the client and TLS and starts the thread. Error text when it cannot run at all.
  std::optional<std::string> start();
  // Only on a topic of the job's publish list, only while connected. Error text or nullopt.
  std::optional<std::string> publish(const std::string& topic, const std::string& payload);

 private:
  void run();
  bool waitOrStop(unsigned ms);
  void status(bool connected, bool refused, std::string text);
  std::string where() const;
  static void onConnect(struct mosquitto*, void* self, int rc);
  static void onDisconnect(struct mosquitto*, void* self, int rc);
  static void onMessage(struct mosquitto*, void* self, const struct mosquitto_message* msg);

  JobSpec job_;
  Handoff& out_;
  struct mosquitto* mosq_ = nullptr;
  struct ssl_ctx_st* tls_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> connected_{false};
  bool refusedLast_ = false;  // session thread only
  std::mutex mu_;
  std::condition_variable wake_;
};

}  // namespace pine::mqtt
