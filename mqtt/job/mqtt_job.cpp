#include "mqtt/job/mqtt_job.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <openssl/crypto.h>

#include "proto/mqtt.capnp.h"

namespace pine::mqtt {

std::optional<std::string> parseMqttUrl(const std::string& url, MqttAddress& out) {
  std::string rest;
  if (url.rfind("mqtt://", 0) == 0) {
    rest = url.substr(7), out.tls = false, out.port = 1883;
  } else if (url.rfind("mqtts://", 0) == 0) {
    rest = url.substr(8), out.tls = true, out.port = 8883;
  } else {
    return "'" + url + "' is not an MQTT address: write mqtt://host:port (or mqtts:// for TLS)";
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('@') != std::string::npos)
    return "the MQTT address holds credentials: remove them and name .env entries in usernameSecret/passwordSecret";
  if (rest.find('/') != std::string::npos || rest.find('?') != std::string::npos)
    return "'" + url + "' has a path: an MQTT address is only mqtt://host:port";
  std::string host = rest, port;
  bool hasPort = false;
  if (!rest.empty() && rest.front() == '[') {  // [v6]:port
    size_t close = rest.find(']');
    if (close == std::string::npos) return "'" + url + "': '[' without ']' in the host";
    host = rest.substr(1, close - 1);
    std::string after = rest.substr(close + 1);
    if (!after.empty() && after.front() != ':') return "'" + url + "': unexpected text after the host";
    hasPort = !after.empty();
    if (hasPort) port = after.substr(1);
  } else if (size_t colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    hasPort = true;
  }
  if (host.empty()) return "'" + url + "' names no host";
  if (hasPort) {
    int n = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || n > 65535) return "'" + url + "': the port must be a number from 1 to 65535";
      n = n * 10 + (c - '0');
    }
    if (port.empty() || n < 1 || n > 65535) return "'" + url + "': the port must be a number from 1 to 65535";
    out.port = n;
  }
  out.host = host;
  return std::nullopt;
}

kj::Array<capnp::word> encodeJob(const JobSpec& j) {
  capnp::MallocMessageBuilder message;
  auto job = message.initRoot<proto::mqtt::MqttJob>();
  job.setSource(j.source);
  job.setHost(j.address.host);
  job.setPort(static_cast<uint16_t>(j.address.port));
  job.setTls(j.address.tls);
  job.setClientId(j.clientId);
  auto topics = job.initTopics(static_cast<unsigned>(j.topics.size()));
  for (unsigned i = 0; i < j.topics.size(); ++i) topics.set(i, j.topics[i]);
  auto gone = job.initUnsubscribe(static_cast<unsigned>(j.unsubscribe.size()));
  for (unsigned i = 0; i < j.unsubscribe.size(); ++i) gone.set(i, j.unsubscribe[i]);
  auto publish = job.initPublish(static_cast<unsigned>(j.publish.size()));
  for (unsigned i = 0; i < j.publish.size(); ++i) publish.set(i, j.publish[i]);
  job.setQos(static_cast<uint8_t>(j.qos));
  job.setKeepaliveSec(static_cast<uint16_t>(j.keepaliveSec));
  job.setUsername(j.username);
  job.setPassword(j.password);
  job.setCaBundle(kj::arrayPtr(reinterpret_cast<const kj::byte*>(j.caPem.data()), j.caPem.size()));
  job.setReconnectMinMs(j.reconnectMinMs);
  job.setReconnectMaxMs(j.reconnectMaxMs);
  auto out = capnp::messageToFlatArray(message);
  for (auto segment : message.getSegmentsForOutput())
    OPENSSL_cleanse(const_cast<capnp::word*>(segment.begin()), segment.asBytes().size());
  return out;
}

}  // namespace pine::mqtt
