#include "mqtt/session.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/cloexec.h"

namespace pine::mqtt {
namespace {

std::string mosqError(int rc) {
  return rc == MOSQ_ERR_ERRNO ? std::string(strerror(errno)) : std::string(mosquitto_strerror(rc));
}

std::string sslError() {
  unsigned long e = ERR_get_error();
  char buf[256] = "";
  if (e) ERR_error_string_n(e, buf, sizeof buf);
  return buf[0] ? buf : "unknown OpenSSL error";
}

bool isIpAddress(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// TLS 1.2 at least, the peer's chain checked against the job's CAs (else the system's) and
// its name against the host: there is no setting that turns either off.
SSL_CTX* makeTls(const JobSpec& job, std::string& why) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) return why = "cannot create a TLS context: " + sslError(), nullptr;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (job.caPem.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) why = "cannot load the system's CA certificates: " + sslError();
  } else {
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    BIO* bio = BIO_new_mem_buf(job.caPem.data(), static_cast<int>(job.caPem.size()));
    int added = 0;
    while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      added += X509_STORE_add_cert(store, cert) == 1;
      X509_free(cert);
    }
    ERR_clear_error();  // the end of the PEM text reads as an error
    BIO_free(bio);
    if (added == 0) why = "the source's caFile holds no PEM certificate";
  }
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  int ok = isIpAddress(job.address.host) ? X509_VERIFY_PARAM_set1_ip_asc(param, job.address.host.c_str())
                                         : X509_VERIFY_PARAM_set1_host(param, job.address.host.c_str(), 0);
  if (ok != 1 && why.empty()) why = "cannot check the server's name '" + job.address.host + "'";
  if (!why.empty()) {
    SSL_CTX_free(ctx);
    return nullptr;
  }
  return ctx;
}

}  // namespace

unsigned reconnectDelayMs(unsigned minMs, unsigned maxMs, unsigned failures, unsigned random) {
  unsigned long long delay = std::max(minMs, 1u);
  for (unsigned i = 0; i < failures && delay < maxMs; ++i) delay *= 2;
  delay = std::min<unsigned long long>(delay, std::max(maxMs, minMs));
  unsigned long long jitter = delay / 2 ? random % (delay / 2 + 1) : 0;
  return static_cast<unsigned>(delay - jitter);
}

std::optional<std::string> publishProblem(const std::vector<std::string>& patterns, const std::string& topic) {
  if (topic.empty() || mosquitto_pub_topic_check(topic.c_str()) != MOSQ_ERR_SUCCESS)
    return "cannot publish on '" + topic + "': not a topic one can send to (empty, too long, or holding + or #)";
  for (const auto& p : patterns) {
    bool match = false;
    if (mosquitto_topic_matches_sub(p.c_str(), topic.c_str(), &match) == MOSQ_ERR_SUCCESS && match)
      return std::nullopt;
  }
  std::string list;
  for (const auto& p : patterns) list += (list.empty() ? "" : ", ") + p;
  if (patterns.empty()) return "'" + topic + "' is not on the source's publish list: it has none, so it only receives";
  return "'" + topic + "' is not on the source's publish list (" + list + ")";
}

Session::Session(JobSpec job, Handoff& out) : job_(std::move(job)), out_(out) {
  int fds[2];
  if (pipeCloexec(fds) == 0) {
    wakeRead_ = fds[0];
    wakeWrite_ = fds[1];
    fcntl(wakeRead_, F_SETFL, O_NONBLOCK);
    fcntl(wakeWrite_, F_SETFL, O_NONBLOCK);
  }
}

Session::~Session() {
  stopping_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_.notify_all();
  }
  out_.stop();
  wake();
  if (thread_.joinable()) thread_.join();
  if (mosq_) {
    // A polite goodbye, with the acknowledgements of what was committed; none when a batch was
    // not (closing the socket leaves those messages with the server, which sends them again).
    if (connected_ && !unacknowledged_ && mosquitto_disconnect(mosq_) == MOSQ_ERR_SUCCESS)
      mosquitto_loop_write(mosq_, 1);
    mosquitto_destroy(mosq_);
  }
  if (tls_) SSL_CTX_free(tls_);
  if (wakeRead_ >= 0) close(wakeRead_);
  if (wakeWrite_ >= 0) close(wakeWrite_);
  OPENSSL_cleanse(job_.password.data(), job_.password.size());
}

void Session::wake() {
  if (wakeWrite_ >= 0) [[maybe_unused]] auto n = ::write(wakeWrite_, "w", 1);  // full: already awake
}

std::string Session::where() const {
  return fmt::format("source '{}' ({}{}:{})", job_.source, job_.address.tls ? "mqtts://" : "mqtt://",
                     job_.address.host, job_.address.port);
}

void Session::status(bool connected, bool refused, std::string text) {
  StatusNote n;
  n.connected = connected;
  n.refused = refused;
  n.text = std::move(text);
  out_.note(std::move(n));
}

std::optional<std::string> Session::start() {
  mosquitto_lib_init();
  const char* id = job_.clientId.empty() ? nullptr : job_.clientId.c_str();
  // A stable id keeps the session at the server while this process is away (a restart, a lost
  // link): what was not acknowledged, and what arrives meanwhile, is sent when it is back.
  mosq_ = mosquitto_new(id, /*clean_session=*/id == nullptr, this);
  if (!mosq_) return where() + ": cannot create an MQTT client: " + std::string(strerror(errno));
  // publish() comes from another thread; and only in this mode does libmosquitto leave a PUBACK
  // queued until the loop's write half instead of writing it before on_message runs.
  mosquitto_threaded_set(mosq_, true);
  mosquitto_connect_callback_set(mosq_, &Session::onConnect);
  mosquitto_disconnect_callback_set(mosq_, &Session::onDisconnect);
  mosquitto_message_callback_set(mosq_, &Session::onMessage);
  if (!job_.username.empty() || !job_.password.empty()) {
    int rc = mosquitto_username_pw_set(mosq_, job_.username.c_str(), job_.password.empty() ? nullptr : job_.password.c_str());
    if (rc != MOSQ_ERR_SUCCESS) return where() + ": cannot set the login: " + mosqError(rc);
  }
  if (job_.address.tls) {
    std::string why;
    tls_ = makeTls(job_, why);
    if (!tls_) return where() + ": " + why;
    // Our context as it is: libmosquitto's defaults would want a CA file on disk, which this
    // process cannot have (the job carries the bytes).
    mosquitto_int_option(mosq_, MOSQ_OPT_SSL_CTX_WITH_DEFAULTS, 0);
    int rc = mosquitto_opts_set(mosq_, MOSQ_OPT_SSL_CTX, tls_);
    if (rc != MOSQ_ERR_SUCCESS) return where() + ": cannot set up TLS: " + mosqError(rc);
  }
  thread_ = std::thread([this] { run(); });
  return std::nullopt;
}

bool Session::waitOrStop(unsigned ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return wake_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_.load(); });
}

int Session::connect(bool first) {
  if (!first) return mosquitto_reconnect(mosq_);  // the same protocol and properties
  mosquitto_int_option(mosq_, MOSQ_OPT_PROTOCOL_VERSION, v5_ ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311);
  if (!v5_) return mosquitto_connect(mosq_, job_.address.host.c_str(), job_.address.port, job_.keepaliveSec);
  mosquitto_property* props = nullptr;
  int rc = mosquitto_property_add_int32(&props, MQTT_PROP_MAXIMUM_PACKET_SIZE, static_cast<uint32_t>(kMaxPacketBytes));
  // MQTT 5 ends a session with its connection unless told otherwise; with a stable client id it is
  // kept (as 3.1.1 keeps it with clean session off), so what was not acknowledged is sent again.
  if (rc == MOSQ_ERR_SUCCESS && !job_.clientId.empty())
    rc = mosquitto_property_add_int32(&props, MQTT_PROP_SESSION_EXPIRY_INTERVAL, UINT32_MAX);
  if (rc == MOSQ_ERR_SUCCESS)
    rc = mosquitto_connect_bind_v5(mosq_, job_.address.host.c_str(), job_.address.port, job_.keepaliveSec, nullptr,
                                   props);
  mosquitto_property_free_all(&props);
  return rc;
}

void Session::run() {
  unsigned failures = 0;
  bool first = true;
  while (!stopping_) {
    refusedLast_ = false;
    int rc = connect(first);
    bool wasConnected = false;
    if (rc == MOSQ_ERR_SUCCESS) {
      first = false;
      rc = serve();
      wasConnected = everConnected_;
    }
    if (stopping_) break;
    if (std::exchange(fallBack_, false)) {
      first = true;  // at once, in 3.1.1 (v5_ is false now)
      continue;
    }

    connected_ = false;
    // It worked: start again from the shortest wait. Not after a message too large to hold, which
    // the server sends again at once (a persistent session, a retained message): that waits longer
    // each time, as a failure does.
    if (wasConnected && !refusedLast_ && rc != MOSQ_ERR_NOMEM) failures = 0;
    unsigned random = 0;
    RAND_bytes(reinterpret_cast<unsigned char*>(&random), sizeof random);
    unsigned wait = reconnectDelayMs(job_.reconnectMinMs, job_.reconnectMaxMs, failures++, random);
    std::string why = rc == MOSQ_ERR_SUCCESS ? "" : mosqError(rc);
    if (rc == MOSQ_ERR_NOMEM)
      why = "a message larger than pine-mqtt may hold (128 MB) came, which the server will send again: set "
            "max_packet_size on the server, or remove the message there";
    if (rc == MOSQ_ERR_TLS || rc == MOSQ_ERR_TLS_HANDSHAKE)
      why = "the TLS handshake failed (is the server's certificate signed by a CA the source trusts, and made out to " +
            job_.address.host + "?)";
    if (rc == kNotCommitted)
      status(false, false,
             fmt::format("{}: the broker did not commit the last messages, so they were not acknowledged and the "
                         "MQTT server sends them again; reconnecting in {:.1f} s",
                         where(), wait / 1000.0));
    else if (!refusedLast_)
      status(false, false,
             fmt::format("{}: {} ({}); trying again in {:.1f} s", where(),
                         wasConnected ? "lost the MQTT server" : "cannot reach the MQTT server", why, wait / 1000.0));
    if (waitOrStop(wait)) break;
  }
}

int Session::serve() {
  unacknowledged_ = false;
  everConnected_ = false;
  while (!stopping_) {
    int sock = mosquitto_socket(mosq_);
    if (sock < 0) return MOSQ_ERR_NO_CONN;
    pollfd fds[2] = {{sock, static_cast<short>(POLLIN | (mosquitto_want_write(mosq_) ? POLLOUT : 0)), 0},
                     {wakeRead_, POLLIN, 0}};
    int n = ::poll(fds, wakeRead_ >= 0 ? 2 : 1, 500);
    if (n < 0 && errno != EINTR) return MOSQ_ERR_ERRNO;
    if (stopping_) break;
    if (n > 0 && (fds[1].revents & POLLIN)) {
      char buf[64];
      while (::read(wakeRead_, buf, sizeof buf) > 0) {
      }
    }
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      if (int rc = readBatch(); rc != MOSQ_ERR_SUCCESS) return rc;
      everConnected_ = everConnected_ || connected_;
      if (!batch_.empty()) {
        batchBytes_ = 0;
        if (!out_.deliver(std::exchange(batch_, {}))) {
          unacknowledged_ = true;
          return stopping_ ? MOSQ_ERR_SUCCESS : kNotCommitted;
        }
      }
    }
    // The write half: the acknowledgements of a committed batch, publishes, the keepalive's ping.
    if (mosquitto_want_write(mosq_))
      if (int rc = mosquitto_loop_write(mosq_, 1); rc != MOSQ_ERR_SUCCESS) return rc;
    if (int rc = mosquitto_loop_misc(mosq_); rc != MOSQ_ERR_SUCCESS) return rc;
  }
  return MOSQ_ERR_SUCCESS;
}

int Session::readBatch() {
  // Read on while reading brings messages: a read that finds the socket empty (or brings only a
  // part, or a packet that is no message) ends the batch once, where asking poll() whether more
  // is there cost a system call for every message (bench/RESULTS.md, MQTT).
  for (;;) {
    size_t before = batch_.size();
    int rc = mosquitto_loop_read(mosq_, 1);
    if (rc != MOSQ_ERR_SUCCESS) {
      // The connection is gone, and with it the chance to acknowledge: the server sends these again.
      batch_.clear();
      batchBytes_ = 0;
      return rc;
    }
    if (batch_.size() == before || batch_.size() >= kBatchMessages || batchBytes_ >= kBatchBytes)
      return MOSQ_ERR_SUCCESS;
  }
}

std::optional<std::string> Session::publish(const std::string& topic, const std::string& payload) {
  if (auto why = publishProblem(job_.publish, topic)) return where() + ": " + *why;
  if (payload.size() > kMaxPayloadBytes)
    return fmt::format("{}: the message is {} bytes, more than the {} a source carries", where(), payload.size(),
                       kMaxPayloadBytes);
  if (!connected_) return where() + ": not connected to its MQTT server right now; nothing was sent, try again later";
  int rc = mosquitto_publish(mosq_, nullptr, topic.c_str(), static_cast<int>(payload.size()), payload.data(), job_.qos,
                             /*retain=*/false);
  if (rc == MOSQ_ERR_NO_CONN)
    return where() + ": not connected to its MQTT server right now; nothing was sent, try again later";
  if (rc != MOSQ_ERR_SUCCESS) return where() + ": publishing on '" + topic + "' failed: " + mosqError(rc);
  wake();  // the session thread writes it
  return std::nullopt;
}

void Session::onConnect(struct mosquitto* mosq, void* selfp, int rc) {
  auto* self = static_cast<Session*>(selfp);
  if (rc != 0 && self->v5_ && rc == MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION) {
    // A server of MQTT 3.1.1 only: it cannot be told the largest message this client takes.
    self->v5_ = false;
    self->fallBack_ = true;
    self->status(false, false,
                 fmt::format("{}: the MQTT server does not speak MQTT 5, so it cannot be told the largest message "
                             "pine takes ({} bytes): connecting with MQTT 3.1.1, where a larger message is read "
                             "whole before it is dropped, and one over 128 MB ends the connection (set "
                             "max_packet_size on the server to bound it)",
                             self->where(), kMaxPacketBytes));
    return;
  }
  if (rc != 0) {
    self->refusedLast_ = true;
    // 4 and 5 in MQTT 3.1.1's codes, 134 and 135 in MQTT 5's.
    bool login = self->v5_ ? rc == MQTT_RC_BAD_USERNAME_OR_PASSWORD || rc == MQTT_RC_NOT_AUTHORIZED : rc == 4 || rc == 5;
    std::string hint = login ? ": check the values of the source's usernameSecret and passwordSecret" : "";
    self->status(false, true,
                 fmt::format("{}: the MQTT server refused the login ({}){}; trying again with backoff", self->where(),
                             self->v5_ ? mosquitto_reason_string(rc) : mosquitto_connack_string(rc), hint));
    return;
  }
  // Filters the session kept from an earlier topic list: off first, so that the server stops sending
  // what the source no longer asks for (the broker would drop it anyway).
  for (const auto& t : self->job_.unsubscribe)
    if (mosquitto_sub_topic_check(t.c_str()) != MOSQ_ERR_SUCCESS)
      continue;  // the server would end the connection at it (pined sends only valid ones)
    else if (int s = mosquitto_unsubscribe(mosq, nullptr, t.c_str()); s != MOSQ_ERR_SUCCESS)
      self->status(true, false, self->where() + ": cannot unsubscribe from '" + t + "': " + mosqError(s));
  for (const auto& t : self->job_.topics) {
    int s = mosquitto_subscribe(mosq, nullptr, t.c_str(), self->job_.qos);
    if (s != MOSQ_ERR_SUCCESS)
      self->status(true, false, self->where() + ": cannot subscribe to '" + t + "': " + mosqError(s));
  }
  self->connected_ = true;
  self->status(true, false, self->where() + (self->v5_ ? ": connected" : ": connected (MQTT 3.1.1: the server does not speak MQTT 5)"));
}

void Session::onDisconnect(struct mosquitto*, void* selfp, int) {
  static_cast<Session*>(selfp)->connected_ = false;  // run() reports it, with the wait
}

void Session::onMessage(struct mosquitto*, void* selfp, const struct mosquitto_message* msg) {
  auto* self = static_cast<Session*>(selfp);
  Heard h;
  h.topic = msg->topic ? msg->topic : "";
  size_t len = msg->payloadlen > 0 ? static_cast<size_t>(msg->payloadlen) : 0;
  if (len > kMaxPayloadBytes) {
    // Dropped here (the broker would drop it too) but said, so that the owner can see it. The topic
    // whole and as it came, or not at all: the note's known values are redacted on the way out
    // (connector.cpp), and a topic cut short or with characters replaced could hold a value no
    // redaction would then find. Controls are escaped by the log and stripped by pinectl.
    std::string shown = h.topic.size() <= 200 ? "topic " + h.topic : "a topic of " + std::to_string(h.topic.size()) + " bytes";
    self->status(true, false,
                 fmt::format("{}: dropped a message of {} bytes on {}: more than the {} bytes an event may carry",
                             self->where(), len, shown, kMaxPayloadBytes));
    return;
  }
  h.payload.assign(static_cast<const char*>(msg->payload), len);
  h.retained = msg->retain;
  self->batchBytes_ += h.topic.size() + len;
  self->batch_.push_back(std::move(h));
}

}  // namespace pine::mqtt
