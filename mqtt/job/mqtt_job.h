// What pined sends one pine-mqtt process (proto/mqtt.capnp MqttJob), as plain types, and the
// parsing of an MQTT address. The only part of mqtt/ that pined links: no MQTT library here.
#pragma once
#include <capnp/common.h>
#include <kj/array.h>

#include <optional>
#include <string>
#include <vector>

namespace pine::mqtt {

struct MqttAddress {
  std::string host;
  int port = 1883;
  bool tls = false;
};

// mqtt://host[:port] or mqtts://host[:port] (8883 by default; a trailing '/' allowed).
// Credentials in the address are refused: they belong in .env. Error text or nullopt.
std::optional<std::string> parseMqttUrl(const std::string& url, MqttAddress& out);

struct JobSpec {
  std::string source;
  MqttAddress address;
  std::string clientId;  // empty: a random one (libmosquitto makes it)
  std::vector<std::string> topics;
  std::vector<std::string> unsubscribe;  // filters this id's session had before and not now
  std::vector<std::string> publish;
  int qos = 1;
  int keepaliveSec = 60;
  std::string username;  // values, not names
  std::string password;
  std::string caPem;     // empty: the system's CAs
  unsigned reconnectMinMs = 1000;
  unsigned reconnectMaxMs = 30000;
};

// The serialized MqttJob. The builder's own copy of the values is wiped before it returns;
// the caller wipes the array once it is sent.
kj::Array<capnp::word> encodeJob(const JobSpec& job);

}  // namespace pine::mqtt
