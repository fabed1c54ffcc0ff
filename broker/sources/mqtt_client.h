// One running MQTT source: a libmosquitto client on its own thread
// (mosquitto_loop_start), which reconnects with backoff when the broker goes
// away and subscribes again on every connect. Everything it hears goes to the
// Inbox; nothing here runs on the event loop except construction, publish()
// and destruction.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "broker/sources/inbox.h"
#include "config/model.h"

struct mosquitto;
struct mosquitto_message;

namespace pine::sources {

struct MqttAddress {
  std::string host;
  int port = 1883;
  bool tls = false;
};

// mqtt://host[:port] or mqtts://host[:port] (a trailing '/' allowed). Credentials
// in the address are refused: they belong in .env. Error text or the address.
std::optional<std::string> parseMqttUrl(const std::string& url, MqttAddress& out);

struct Backoff {
  unsigned minSec = 1;   // first wait after losing the broker
  unsigned maxSec = 30;  // the wait doubles up to this
};

class MqttClient {
 public:
  // Does not connect yet: start() does.
  MqttClient(config::Source source, MqttAddress address, uint64_t id, Inbox& inbox, Backoff backoff);
  ~MqttClient();  // disconnects and joins the client's thread
  MqttClient(const MqttClient&) = delete;
  MqttClient& operator=(const MqttClient&) = delete;

  // Starts the thread and the first connection attempt; a broker that is not
  // there yet is retried with backoff. Error text when the client cannot run at all.
  std::optional<std::string> start();

  // Topic already checked against the source's publish list. Error text or nullopt.
  std::optional<std::string> publish(const std::string& topic, const std::string& payload);

  const config::Source& source() const { return source_; }
  uint64_t id() const { return id_; }

 private:
  static void onConnect(struct mosquitto*, void* self, int rc);
  static void onDisconnect(struct mosquitto*, void* self, int rc);
  static void onMessage(struct mosquitto*, void* self, const struct mosquitto_message* msg);

  std::string where() const;

  config::Source source_;
  MqttAddress address_;
  uint64_t id_;
  Inbox& inbox_;
  Backoff backoff_;
  struct mosquitto* mosq_ = nullptr;
  bool threadStarted_ = false;
};

}  // namespace pine::sources
