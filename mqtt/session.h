// One MQTT session for one source, on a thread of its own: connects (TLS with the server's
// certificate and name verified when the address is mqtts://), logs in with the job's
// username and password, subscribes on every connect, and when the server goes away or
// refuses the login tries again after a wait that doubles up to a cap, with jitter. It speaks
// MQTT 5, so that the server can be told the largest message it may send (kMaxPacketBytes), and
// MQTT 3.1.1 from the moment a server says it speaks nothing newer. Every
// change of state goes to the Handoff; messages go there in batches, and a batch is
// acknowledged to the server (QoS 1) only once the broker says it is committed.
// publish() may be called from the event loop's thread at any time.
//
// How the acknowledgement waits: libmosquitto queues a PUBACK before it calls on_message and
// writes its queue only in the write half of its loop. This thread runs the halves itself
// (mosquitto_loop_read, then the hand-off and its wait, then mosquitto_loop_write), so the
// PUBACKs of a batch leave after its commit. When the commit fails or the process stops first,
// the connection is dropped with them unsent, and the server (the session is persistent: a
// stable client id, clean session off) sends those messages again.
#pragma once
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mqtt/handoff.h"
#include "mqtt/job/mqtt_job.h"

struct mosquitto;
struct mosquitto_message;
struct ssl_ctx_st;

namespace pine::mqtt {

inline constexpr size_t kMaxPayloadBytes = 256 * 1024;
// The largest packet an MQTT 5 server may send this client (its Maximum Packet Size): a message
// of kMaxPayloadBytes with the longest topic MQTT allows and room for its properties. The server
// drops a larger message for this client instead of sending it, so pine-mqtt never reads more
// than this of one message (libmosquitto reads a packet whole before it is seen).
inline constexpr size_t kMaxPacketBytes = kMaxPayloadBytes + 64 * 1024 + 4 * 1024;
// One batch (one read of the socket) at most: a capnp message well under the link's limit.
inline constexpr size_t kBatchMessages = 1000, kBatchBytes = 512 * 1024;

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
  // Serves one connection until it ends or the process stops: MOSQ_ERR_SUCCESS when stopping.
  int serve();
  // Reads what the socket holds, up to one batch; messages land in batch_.
  int readBatch();
  void wake();
  bool waitOrStop(unsigned ms);
  void status(bool connected, bool refused, std::string text);
  std::string where() const;
  // mosquitto_connect (first: the protocol and its CONNECT properties set anew) or _reconnect.
  int connect(bool first);
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
  static constexpr int kNotCommitted = -100;  // serve(): the broker did not commit a batch
  bool refusedLast_ = false;  // session thread only
  // MQTT 5 (with kMaxPacketBytes) until the server says it speaks only 3.1.1; then 3.1.1 for good.
  bool v5_ = true;
  bool fallBack_ = false;  // the last CONNECT was refused for its protocol version: 3.1.1 at once
  bool everConnected_ = false;
  bool unacknowledged_ = false;  // a batch was not committed: never write its PUBACKs
  std::vector<Heard> batch_;     // session thread only
  size_t batchBytes_ = 0;
  int wakeRead_ = -1, wakeWrite_ = -1;  // publish() and the destructor wake the thread's poll
  std::mutex mu_;
  std::condition_variable wake_;
};

}  // namespace pine::mqtt
