#include "broker/sources/mqtt_client.h"

#include <fmt/format.h>
#include <mosquitto.h>

#include <mutex>
#include <nlohmann/json.hpp>

#include "broker/policy/topics.h"
#include "broker/sources/payload.h"

namespace pine::sources {
namespace {

constexpr int kKeepaliveSec = 60;
constexpr const char* kCaPath = "/etc/ssl/certs";

void initLibrary() {
  static std::once_flag once;
  std::call_once(once, [] { mosquitto_lib_init(); });
}

// A topic from outside, printable in a log line whatever bytes it holds.
std::string quoted(std::string_view s) {
  return nlohmann::json(std::string(s.substr(0, 300))).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string mosqError(int rc) {
  return rc == MOSQ_ERR_ERRNO ? std::string(strerror(errno)) : std::string(mosquitto_strerror(rc));
}

}  // namespace

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

MqttClient::MqttClient(config::Source source, MqttAddress address, uint64_t id, Inbox& inbox, Backoff backoff)
    : source_(std::move(source)), address_(std::move(address)), id_(id), inbox_(inbox), backoff_(backoff) {}

MqttClient::~MqttClient() {
  if (!mosq_) return;
  if (threadStarted_) {
    // disconnect marks the client as leaving, so the loop ends instead of reconnecting.
    mosquitto_disconnect(mosq_);
    mosquitto_loop_stop(mosq_, false);
  }
  mosquitto_destroy(mosq_);
}

std::string MqttClient::where() const {
  return fmt::format("source '{}' ({}:{})", source_.name, address_.host, address_.port);
}

std::optional<std::string> MqttClient::start() {
  initLibrary();
  mosq_ = mosquitto_new(nullptr, /*clean_session=*/true, this);
  if (!mosq_) return where() + ": cannot create an MQTT client: " + std::string(strerror(errno));
  mosquitto_connect_callback_set(mosq_, &MqttClient::onConnect);
  mosquitto_disconnect_callback_set(mosq_, &MqttClient::onDisconnect);
  mosquitto_message_callback_set(mosq_, &MqttClient::onMessage);
  mosquitto_reconnect_delay_set(mosq_, backoff_.minSec, backoff_.maxSec, /*exponential=*/true);
  if (address_.tls) {
    int rc = mosquitto_tls_set(mosq_, nullptr, kCaPath, nullptr, nullptr, nullptr);
    if (rc != MOSQ_ERR_SUCCESS) return where() + ": cannot set up TLS: " + mosqError(rc);
  }
  // The thread first, so that a broker not reachable yet is retried by the loop with backoff.
  int rc = mosquitto_loop_start(mosq_);
  if (rc != MOSQ_ERR_SUCCESS) return where() + ": cannot start the client thread: " + mosqError(rc);
  threadStarted_ = true;
  rc = mosquitto_connect_async(mosq_, address_.host.c_str(), address_.port, kKeepaliveSec);
  if (rc != MOSQ_ERR_SUCCESS)
    inbox_.log(id_, spdlog::level::warn,
               where() + ": cannot connect yet (" + mosqError(rc) + "); retrying with backoff");
  return std::nullopt;
}

std::optional<std::string> MqttClient::publish(const std::string& topic, const std::string& payload) {
  if (payload.size() > kMaxPayloadBytes)
    return fmt::format("{}: the message is {} bytes, more than the {} a source carries", where(), payload.size(),
                       kMaxPayloadBytes);
  int rc = mosquitto_publish(mosq_, nullptr, topic.c_str(), static_cast<int>(payload.size()), payload.data(),
                             /*qos=*/1, /*retain=*/false);
  if (rc == MOSQ_ERR_NO_CONN)
    return where() + ": not connected to its MQTT broker right now; nothing was sent, try again later";
  if (rc != MOSQ_ERR_SUCCESS) return where() + ": publishing on '" + topic + "' failed: " + mosqError(rc);
  return std::nullopt;
}

void MqttClient::onConnect(struct mosquitto* mosq, void* selfp, int rc) {
  auto* self = static_cast<MqttClient*>(selfp);
  if (rc != 0) {
    self->inbox_.log(self->id_, spdlog::level::warn,
                     self->where() + ": the MQTT broker refused the connection: " +
                         mosquitto_connack_string(rc) + "; retrying with backoff");
    return;
  }
  for (const auto& t : self->source_.topics) {
    int s = mosquitto_subscribe(mosq, nullptr, t.c_str(), /*qos=*/1);
    if (s != MOSQ_ERR_SUCCESS)
      self->inbox_.log(self->id_, spdlog::level::warn,
                       self->where() + ": cannot subscribe to '" + t + "': " + mosqError(s));
  }
  self->inbox_.log(self->id_, spdlog::level::info, self->where() + ": connected");
}

void MqttClient::onDisconnect(struct mosquitto*, void* selfp, int rc) {
  auto* self = static_cast<MqttClient*>(selfp);
  if (rc == 0) return;  // we asked for it
  self->inbox_.log(self->id_, spdlog::level::warn,
                   fmt::format("{}: lost the MQTT broker ({}); reconnecting with backoff ({} s up to {} s)",
                               self->where(), mosqError(rc), self->backoff_.minSec, self->backoff_.maxSec));
}

void MqttClient::onMessage(struct mosquitto*, void* selfp, const struct mosquitto_message* msg) {
  auto* self = static_cast<MqttClient*>(selfp);
  std::string_view topic(msg->topic ? msg->topic : "");
  // A stranger's topic must not land in pine's own topic space (approval/, agent/, ...).
  if (auto why = policy::validateTopic(topic)) {
    self->inbox_.log(self->id_, spdlog::level::warn,
                     self->where() + ": dropped a message on " + quoted(topic) + ": " + *why);
    return;
  }
  if (policy::isReservedTopic(topic)) {
    self->inbox_.log(self->id_, spdlog::level::warn,
                     self->where() + ": dropped a message on " + quoted(topic) +
                         ": that is pine's own topic space (agent/, approval/, pine/, state/, timer/)");
    return;
  }
  size_t len = msg->payloadlen > 0 ? static_cast<size_t>(msg->payloadlen) : 0;
  auto json = payloadToJson(std::string_view(static_cast<const char*>(msg->payload), len));
  if (!json) {
    self->inbox_.log(self->id_, spdlog::level::warn,
                     fmt::format("{}: dropped a message of {} bytes on {}: more than the {} bytes an event may carry",
                                 self->where(), len, quoted(topic), kMaxPayloadBytes));
    return;
  }
  InboxItem item;
  item.client = self->id_;
  item.draft = Draft{self->source_.name, std::string(topic), config::enumName(self->source_.trust), std::move(*json), {}};
  self->inbox_.push(std::move(item));
}

}  // namespace pine::sources
