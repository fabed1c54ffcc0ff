// MQTT with a login and TLS, each session in a real pine-mqtt: a login accepted and a wrong
// one refused with its reason, a secret missing from .env named, a server certificate the
// source does not trust refused and its own CA accepted, and the publish list enforced by the
// connector itself when the broker is bypassed; the backoff's waits; a connector that dies
// started again; messages a TLS server packs into one record all read, past a full batch.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "common/rpc_link.h"
#include "common/send_no_signal.h"
#include "mqtt/session.h"
#include "proto/mqtt.capnp.h"
#include "tests/sources/mosquitto_fixture.h"

using namespace sources_test;
using namespace std::chrono_literals;
using pine::sources::SourceManager;

namespace {

const std::string kUser = "pine-house";
const std::string kPassword = "mqtt-pass-7c1e93b0d4a2";

pine::config::Source withLogin(pine::config::Source s) {
  s.usernameSecret = "MQTT_USER";
  s.passwordSecret = "MQTT_PASSWORD";
  return s;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// What a connector reports, when the test stands where the broker would.
struct Reports final : public pine::proto::mqtt::MqttEvents::Server {
  std::vector<std::string>* statuses;
  explicit Reports(std::vector<std::string>& s) : statuses(&s) {}
  kj::Promise<void> messages(MessagesContext) override { return kj::READY_NOW; }
  kj::Promise<void> status(StatusContext c) override {
    statuses->push_back(std::string(c.getParams().getConnected() ? "connected: " : "not: ") +
                        c.getParams().getText().cStr());
    return kj::READY_NOW;
  }
};

// A mosquitto that wants kUser's login, and a manager whose connectors get `password` from .env
// (none when empty).
struct Secured {
  Mosquitto broker;
  Loop loop;
  Connectors conns;
  SourceManager manager;
  Secured(const std::string& password, bool tls)
      : broker({kUser, kPassword, tls}), manager(loop.io, loop.sink(), conns.opener(loop.io), fast()) {
    conns.setSecret("MQTT_USER", kUser);
    if (!password.empty()) conns.setSecret("MQTT_PASSWORD", password);
  }
};

// The Maximum Packet Size property of an MQTT 5 CONNECT's body, 0 when it has none (or is 3.1.1).
uint32_t maximumPacketSize(const std::string& connect) {
  auto byte = [&](size_t i) { return i < connect.size() ? static_cast<unsigned char>(connect[i]) : 0u; };
  if (connect.size() < 11 || byte(6) != 5) return 0;  // after the name "MQTT": the protocol level
  size_t length = 0, at = 10;  // after the flags and the keepalive: the properties' length
  for (int shift = 0;; shift += 7) {
    unsigned b = byte(at++);
    length |= static_cast<size_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  for (size_t end = std::min(at + length, connect.size()); at < end;) {
    unsigned id = byte(at++);
    auto u32 = [&] { return byte(at) << 24 | byte(at + 1) << 16 | byte(at + 2) << 8 | byte(at + 3); };
    if (id == 0x27) return u32();
    if (id == 0x11) at += 4;                                          // session expiry interval
    else if (id == 0x21 || id == 0x22) at += 2;                       // receive / topic alias maximum
    else if (id == 0x17 || id == 0x19) at += 1;                       // request problem / response information
    else return 0;                                                    // not one libmosquitto sends unasked
  }
  return 0;
}

// An MQTT server over TLS that writes several packets in one TLS record, as servers that
// gather their writes do (mosquitto writes one record a packet). To its client: a CONNACK,
// then, once it subscribed, one record holding the SUBACK and `count` QoS 0 messages on b/<i>
// with the payload <i>; then nothing more (the client's keepalive is a minute away). It speaks
// the protocol version the client's CONNECT asks for; `only311`: it refuses an MQTT 5 CONNECT
// as a server of 3.1.1 only does (a 3.1.1 CONNACK, "unacceptable protocol version") and
// closes, and serves the client's next connection.
class OneRecordServer {
 public:
  explicit OneRecordServer(int count, bool only311 = false) : count_(count), only311_(only311) {
    char tmpl[] = "/tmp/pine-one-record-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    makeCertificates(dir_);
    ctx_ = SSL_CTX_new(TLS_server_method());
    REQUIRE(SSL_CTX_use_certificate_file(ctx_, (dir_ + "/server.crt").c_str(), SSL_FILETYPE_PEM) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey_file(ctx_, (dir_ + "/server.key").c_str(), SSL_FILETYPE_PEM) == 1);
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listen_, 4) == 0);
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~OneRecordServer() {
    ::shutdown(listen_, SHUT_RDWR);  // ends a wait for the client, if it never came
    thread_.join();
    ::close(listen_);
    SSL_CTX_free(ctx_);
    std::filesystem::remove_all(dir_);
  }
  std::string url() const { return "mqtts://127.0.0.1:" + std::to_string(port_); }
  std::string caFile() const { return dir_ + "/ca.crt"; }
  bool recordSent() const { return sent_; }  // as one record
  // What the CONNECTs asked for: protocol levels in order, and the first one's Maximum Packet Size.
  std::vector<int> levels() const {
    std::lock_guard<std::mutex> lock(mu_);
    return levels_;
  }
  uint32_t maxPacket() const { return maxPacket_; }

 private:
  static void appendLength(std::string& out, size_t n) {
    do {
      unsigned char b = n % 128;
      n /= 128;
      out += static_cast<char>(n ? b | 0x80 : b);
    } while (n);
  }
  // One packet: its type byte and its body (the remaining length is read and skipped over).
  static bool readPacket(SSL* ssl, unsigned char& type, std::string& body) {
    if (SSL_read(ssl, &type, 1) != 1) return false;
    size_t length = 0;
    for (int shift = 0;; shift += 7) {
      unsigned char b;
      if (SSL_read(ssl, &b, 1) != 1) return false;
      length |= static_cast<size_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    body.resize(length);
    for (size_t got = 0; got < length;) {
      int n = SSL_read(ssl, body.data() + got, static_cast<int>(length - got));
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
    }
    return true;
  }
  void serve() {
    for (bool served = false; !served;) {
      pollfd p{listen_, POLLIN, 0};
      if (::poll(&p, 1, 20000) != 1) return;
      int fd = ::accept(listen_, nullptr, nullptr);
      if (fd < 0) return;
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, fd);
      served = serveOne(ssl);
      SSL_free(ssl);
      ::close(fd);
    }
  }
  // False when it refused the connection for its protocol version.
  bool serveOne(SSL* ssl) {
    unsigned char type = 0;
    std::string body;
    if (SSL_accept(ssl) != 1 || !readPacket(ssl, type, body) || type != 0x10 || body.size() < 7) return true;
    const bool v5 = body[6] == 5;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (levels_.empty()) maxPacket_ = maximumPacketSize(body);
      levels_.push_back(body[6]);
    }
    if (v5 && only311_) {
      SSL_write(ssl, "\x20\x02\x00\x01", 4);  // a 3.1.1 CONNACK: unacceptable protocol version
      return false;
    }
    // MQTT 5 packets carry a properties length (none here) after their variable header.
    if (v5)
      SSL_write(ssl, "\x20\x03\x00\x00\x00", 5);  // CONNACK: accepted
    else
      SSL_write(ssl, "\x20\x02\x00\x00", 4);
    while (readPacket(ssl, type, body) && (type & 0xf0) != 0x80) {
    }
    if ((type & 0xf0) != 0x80 || body.size() < 2) return true;
    std::string record = v5 ? "\x90\x04" : "\x90\x03";  // SUBACK for its packet id, QoS 1 granted
    record += body.substr(0, 2);
    if (v5) record += '\0';
    record += '\x01';
    for (int i = 0; i < count_; ++i) {
      std::string topic = "b/" + std::to_string(i), payload = std::to_string(i);
      record += '\x30';  // PUBLISH, QoS 0
      appendLength(record, 2 + topic.size() + (v5 ? 1 : 0) + payload.size());
      record += static_cast<char>(topic.size() >> 8);
      record += static_cast<char>(topic.size() & 0xff);
      record += topic;
      if (v5) record += '\0';
      record += payload;
    }
    // One write of at most 16 KiB is one TLS record.
    sent_ = record.size() <= 16384 &&
            SSL_write(ssl, record.data(), static_cast<int>(record.size())) == static_cast<int>(record.size());
    while (readPacket(ssl, type, body)) {  // until the client goes
    }
    return true;
  }

  int count_;
  bool only311_;
  mutable std::mutex mu_;
  std::vector<int> levels_;
  std::atomic<uint32_t> maxPacket_{0};
  std::string dir_;
  SSL_CTX* ctx_ = nullptr;
  int listen_ = -1, port_ = 0;
  std::atomic<bool> sent_{false};
  std::thread thread_;
};

// A plain MQTT 5 server that ignores the client's Maximum Packet Size: to its first client, once
// subscribed, a PUBLISH of `hugeBytes` on b/huge, written until the client goes; to the next one a
// small message on b/after. The one a hostile or broken server (or whoever is in the middle of a
// plain mqtt:// connection) could send.
class HugeMessageServer {
 public:
  explicit HugeMessageServer(size_t hugeBytes) : huge_(hugeBytes) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listen_, 4) == 0);
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~HugeMessageServer() {
    ::shutdown(listen_, SHUT_RDWR);
    thread_.join();
    ::close(listen_);
  }
  std::string url() const { return "mqtt://127.0.0.1:" + std::to_string(port_); }
  size_t hugeSent() const { return sent_; }

 private:
  static bool readPacket(int fd, unsigned char& type, std::string& body) {
    if (::recv(fd, &type, 1, MSG_WAITALL) != 1) return false;
    size_t length = 0;
    for (int shift = 0;; shift += 7) {
      unsigned char b;
      if (::recv(fd, &b, 1, MSG_WAITALL) != 1) return false;
      length |= static_cast<size_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    body.resize(length);
    return length == 0 || ::recv(fd, body.data(), length, MSG_WAITALL) == static_cast<ssize_t>(length);
  }
  static std::string publish(const std::string& topic, size_t payloadBytes) {
    std::string p = "\x30";
    size_t n = 2 + topic.size() + 1 + payloadBytes;  // topic, no properties, payload
    do {
      unsigned char b = n % 128;
      n /= 128;
      p += static_cast<char>(n ? b | 0x80 : b);
    } while (n);
    p += static_cast<char>(topic.size() >> 8);
    p += static_cast<char>(topic.size() & 0xff);
    return p + topic + '\0';
  }
  void serve() {
    for (int connection = 0; connection < 2; ++connection) {
      pollfd p{listen_, POLLIN, 0};
      if (::poll(&p, 1, 20000) != 1) return;
      int fd = ::accept(listen_, nullptr, nullptr);
      if (fd < 0) return;
      unsigned char type = 0;
      std::string body;
      if (readPacket(fd, type, body) && type == 0x10) {
        pine::sendNoSignal(fd, "\x20\x03\x00\x00\x00", 5, 0);  // CONNACK, MQTT 5
        while (readPacket(fd, type, body) && (type & 0xf0) != 0x80) {
        }
        if ((type & 0xf0) == 0x80 && body.size() >= 2) {
          std::string suback = "\x90\x04" + body.substr(0, 2) + std::string("\0\x01", 2);
          pine::sendNoSignal(fd, suback.data(), suback.size(), 0);
          if (connection == 0) {
            std::string head = publish("b/huge", huge_);
            pine::sendNoSignal(fd, head.data(), head.size(), 0);
            std::string chunk(1 << 20, 'x');
            for (size_t left = huge_; left > 0;) {
              ssize_t n = pine::sendNoSignal(fd, chunk.data(), std::min(left, chunk.size()), 0);
              if (n <= 0) break;  // the client went
              left -= static_cast<size_t>(n);
              sent_ += static_cast<size_t>(n);
            }
          } else {
            std::string small = publish("b/after", 2) + "ok";
            pine::sendNoSignal(fd, small.data(), small.size(), 0);
          }
          while (readPacket(fd, type, body)) {  // until the client goes
          }
        }
      }
      ::close(fd);
    }
  }

  size_t huge_;
  int listen_ = -1, port_ = 0;
  std::atomic<size_t> sent_{0};
  std::thread thread_;
};

// The drafts on b/0 .. b/<count-1>, each once and in order.
bool allInOrder(const std::vector<pine::sources::Draft>& drafts, int count) {
  if (static_cast<int>(drafts.size()) != count) return false;
  for (int i = 0; i < count; ++i)
    if (drafts[i].topic != "b/" + std::to_string(i) || drafts[i].payload != std::to_string(i)) return false;
  return true;
}

}  // namespace

TEST_CASE("connector: messages a TLS server packs into one record all arrive, after a SUBACK and past a full batch") {
  // 3: the SUBACK (no message) comes first in the record; 1200: more than one batch (1000) of it.
  for (int count : {3, 1200}) {
    CAPTURE(count);
    OneRecordServer server(count);
    Loop loop;
    Connectors conns;
    SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
    auto source = mqttSource("gathered", server.url(), {"b/#"});
    source.caFile = server.caFile();
    manager.update({source});
    // Nothing else comes from the server, so the socket is not readable again: what OpenSSL holds
    // must be read now (libmosquitto's read goes on while OpenSSL holds more), or it would wait a
    // minute, for the answer to the keepalive's ping.
    CHECK(loop.until([&] { return static_cast<int>(loop.drafts.size()) >= count; }, 10s));
    CHECK(server.recordSent());
    CHECK(allInOrder(loop.drafts, count));
    // MQTT 5, telling the server the largest packet it may send.
    CHECK(server.levels() == std::vector<int>{5});
    CHECK(server.maxPacket() == pine::mqtt::kMaxPacketBytes);
    manager.update({});
  }
}

TEST_CASE("connector: a server that sends a message far over the Maximum Packet Size costs pine-mqtt no memory") {
  if (kAddressSanitizer) return;  // the bound is not set there (see kAddressSanitizer)
  LogCapture log;
  HugeMessageServer server(200u << 20);
  Loop loop;
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  manager.update({mqttSource("hostile", server.url(), {"b/#"})});
  // The connection with the 200 MB message ends; the next one brings its message.
  REQUIRE(loop.until([&] { return loop.drafts.size() == 1; }, 20s));
  CHECK(loop.drafts[0].topic == "b/after");
  REQUIRE(conns.pids().size() == 1);  // the same pine-mqtt: it did not die of it
  const long peak = peakKb(conns.pids()[0]);
  CHECK(peak > 0);
  // Before: libmosquitto read it whole (400 MB at the peak).
  CHECK_MESSAGE(peak < 64 * 1024, "pine-mqtt's peak: ", peak, " KiB");
  CHECK(server.hugeSent() < (200u << 20));  // the client went before it was all sent
  CHECK(log.occurrences("lost the MQTT server") >= 1);
  CHECK(log.occurrences("a message larger than pine-mqtt may hold (128 MB) came") >= 1);  // and what to do
  manager.update({});
}

TEST_CASE("connector: a server of MQTT 3.1.1 only is spoken to in 3.1.1 at once, said once, and its messages arrive") {
  LogCapture log;
  OneRecordServer server(3, /*only311=*/true);
  Loop loop;
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  auto source = mqttSource("old", server.url(), {"b/#"});
  source.caFile = server.caFile();
  manager.update({source});
  CHECK(loop.until([&] { return loop.drafts.size() >= 3; }, 10s));
  CHECK(allInOrder(loop.drafts, 3));
  CHECK(server.levels() == std::vector<int>{5, 4});
  CHECK(log.occurrences("does not speak MQTT 5") == 2);  // the fallback's note, and the connected line
  CHECK(log.occurrences("connected (MQTT 3.1.1: the server does not speak MQTT 5)") == 1);
  CHECK(log.occurrences("cannot reach the MQTT server") == 0);  // no wait, no failure counted
  CHECK(manager.notRunning().empty());
  manager.update({});
}

TEST_CASE("connector: the login from .env is accepted; the broker never held it") {
  LogCapture log;
  Secured f(kPassword, false);
  // Plain references: clang 14 cannot capture a structured binding in a lambda.
  [[maybe_unused]] auto& broker = f.broker;
  [[maybe_unused]] auto& loop = f.loop;
  [[maybe_unused]] auto& conns = f.conns;
  [[maybe_unused]] auto& manager = f.manager;
  manager.update({withLogin(mqttSource("house", broker.url(), {"house/#"}, {"house/cmd/#"}))});
  Client client(broker.port(), {"house/cmd/#"}, kUser, kPassword);
  REQUIRE(waitSubscribed(loop, client, "house/probe", 10s));
  CHECK(manager.running() == std::vector<std::string>{"house"});
  CHECK(manager.notRunning().empty());
  CHECK_FALSE(manager.publish("house", "house/cmd/lamp", "on").wait(loop.io.waitScope).has_value());
  CHECK(client.waitHeard([](const std::string& t, const std::string& p) { return t == "house/cmd/lamp" && p == "on"; },
                         5s));
  CHECK(log.occurrences(kPassword) == 0);
}

TEST_CASE("connector: a wrong password is refused, said in notRunning and the log, and tried again only with backoff") {
  LogCapture log;
  Secured f("not-the-password-1234", false);
  // Plain references: clang 14 cannot capture a structured binding in a lambda.
  [[maybe_unused]] auto& broker = f.broker;
  [[maybe_unused]] auto& loop = f.loop;
  [[maybe_unused]] auto& conns = f.conns;
  [[maybe_unused]] auto& manager = f.manager;
  manager.update({withLogin(mqttSource("house", broker.url(), {"house/#"}))});
  REQUIRE(loop.until([&] { return manager.notRunning().count("house") > 0; }, 10s));
  std::string why = manager.notRunning()["house"];
  CHECK_MESSAGE(has(why, "source 'house'"), why);
  CHECK_MESSAGE(has(why, "the MQTT server refused the login"), why);
  CHECK_MESSAGE(has(why, "usernameSecret and passwordSecret"), why);
  CHECK(manager.running().empty());
  loop.run(1500ms);
  CHECK(log.occurrences("the MQTT server refused the login") > 0);
  CHECK(log.occurrences("not-the-password-1234") == 0);
  // Backoff: 200 ms doubling to 1 s with jitter is at most about 5 tries in 1.5 s, never a tight loop.
  size_t tries = 0;
  std::string text = log.out.str();
  for (size_t p = text.find("refused the login"); p != std::string::npos; p = text.find("refused the login", p + 1))
    ++tries;
  CHECK(tries >= 2);
  CHECK(tries <= 8);
  CHECK(loop.drafts.empty());
}

TEST_CASE("connector: a secret missing from .env is named, with how to set it") {
  Secured f("", false);
  // Plain references: clang 14 cannot capture a structured binding in a lambda.
  [[maybe_unused]] auto& broker = f.broker;
  [[maybe_unused]] auto& loop = f.loop;
  [[maybe_unused]] auto& conns = f.conns;
  [[maybe_unused]] auto& manager = f.manager;
  manager.update({withLogin(mqttSource("house", broker.url(), {"house/#"}))});
  REQUIRE(loop.until([&] { return manager.notRunning().count("house") > 0; }, 5s));
  std::string why = manager.notRunning()["house"];
  CHECK_MESSAGE(has(why, "its passwordSecret names MQTT_PASSWORD, which is not in .env"), why);
  CHECK_MESSAGE(has(why, "pinectl secret set MQTT_PASSWORD"), why);
}

TEST_CASE("connector: TLS with a certificate the source does not trust is refused; with its caFile accepted") {
  Secured f(kPassword, true);
  // Plain references: clang 14 cannot capture a structured binding in a lambda.
  [[maybe_unused]] auto& broker = f.broker;
  [[maybe_unused]] auto& loop = f.loop;
  [[maybe_unused]] auto& conns = f.conns;
  [[maybe_unused]] auto& manager = f.manager;
  Client client(broker.port(), {}, kUser, kPassword);  // the plain listener, same broker

  auto system = withLogin(mqttSource("system", broker.tlsUrl(), {"tls/#"}));  // the system's CAs only
  auto other = withLogin(mqttSource("other", broker.tlsUrl(), {"tls/#"}));
  other.caFile = broker.otherCaFile();
  manager.update({system, other});
  REQUIRE(loop.until([&] { return manager.notRunning().size() == 2; }, 10s));
  for (auto& entry : manager.notRunning()) {
    const std::string& name = entry.first;  // not a structured binding: clang 14 cannot capture one
    const std::string& why = entry.second;
    CAPTURE(name);
    CHECK_MESSAGE(has(why, "TLS"), why);
  }
  client.publish("tls/x", "1");
  loop.run(500ms);
  CHECK(loop.drafts.empty());

  for (std::string host : {"127.0.0.1", "localhost"}) {
    CAPTURE(host);
    auto mine = withLogin(mqttSource("mine", broker.tlsUrl(host), {"tls/#"}));
    mine.caFile = broker.caFile();
    manager.update({mine});
    CHECK(waitSubscribed(loop, client, "tls/probe-" + host, 10s));
    CHECK(manager.notRunning().empty());
    manager.update({});
    loop.drafts.clear();
  }
}

TEST_CASE("connector: a caFile on a plain mqtt:// address is refused before any session") {
  Loop loop;
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  auto s = mqttSource("plain", "mqtt://127.0.0.1:1", {"x"});
  s.caFile = "/etc/hostname";
  manager.update({s});
  REQUIRE(loop.until([&] { return manager.notRunning().count("plain") > 0; }, 5s));
  CHECK(has(manager.notRunning()["plain"], "caFile is for an mqtts:// address"));
}

TEST_CASE("connector: refuses a topic off the publish list even when the broker's check is bypassed") {
  Mosquitto broker;
  Loop loop;
  Connectors conns;
  Client listener(broker.port(), {"#"});
  auto open = conns.opener(loop.io);
  auto stream = open(mqttSource("house", broker.url(), {"in/#"}, {"out/#"})).wait(loop.io.waitScope);
  std::vector<std::string> statuses;
  pine::RpcLink link(kj::mv(stream), capnp::rpc::twoparty::Side::SERVER, kj::heap<Reports>(statuses),
                     pine::LinkLimits{0, 1 << 17});
  auto session = link.peer().castAs<pine::proto::mqtt::MqttSession>();
  REQUIRE(loop.until([&] {
    for (auto& s : statuses)
      if (s.rfind("connected: ", 0) == 0) return true;
    return false;
  }, 10s));
  auto send = [&](const std::string& topic) {
    auto req = session.publishRequest();
    req.setTopic(topic);
    req.setPayload(kj::StringPtr("direct").asBytes());
    return std::string(req.send().wait(loop.io.waitScope).getError().cStr());
  };
  for (const char* refused : {"in/x", "outside", "approval/1", "out/+"}) {
    CAPTURE(refused);
    std::string why = send(refused);
    CHECK_FALSE(why.empty());
  }
  CHECK(has(send("in/x"), "not on the source's publish list (out/#)"));
  CHECK(send("out/lamp").empty());
  CHECK(listener.waitHeard([](const std::string& t, const std::string& p) { return t == "out/lamp" && p == "direct"; },
                           5s));
  listener.waitHeard([](const std::string&, const std::string&) { return false; }, 300ms);
  for (const auto& heard : listener.heard()) {
    const auto& t = heard.first;  // not a structured binding: clang 14 cannot capture one
    [[maybe_unused]] const auto& p = heard.second;
    CAPTURE(t);
    CHECK((t == "out/lamp" || p != "direct"));
  }
}

TEST_CASE("connector: the wait before reconnecting doubles up to its cap, with up to half taken off at random") {
  using pine::mqtt::reconnectDelayMs;
  for (unsigned random : {0u, 1u, 777u, 0xffffffffu}) {
    CAPTURE(random);
    unsigned first = reconnectDelayMs(1000, 30000, 0, random);
    CHECK(first >= 500);
    CHECK(first <= 1000);
    unsigned third = reconnectDelayMs(1000, 30000, 2, random);
    CHECK(third >= 2000);
    CHECK(third <= 4000);
    for (unsigned failures : {5u, 6u, 40u, 1000u}) {
      unsigned late = reconnectDelayMs(1000, 30000, failures, random);
      CHECK(late >= 15000);
      CHECK(late <= 30000);
    }
  }
  CHECK(reconnectDelayMs(1000, 30000, 3, 0) == 8000);     // no jitter drawn: the full wait
  CHECK(reconnectDelayMs(1000, 30000, 3, 4000) == 4000);  // the most taken off: half
}

TEST_CASE("connector: the publish list as the connector reads it (MQTT wildcards), and topics one cannot send to") {
  using pine::mqtt::publishProblem;
  const std::vector<std::string> list = {"home/+/set", "out/#"};
  for (const char* ok : {"home/lamp/set", "out", "out/a/b"}) {
    CAPTURE(ok);
    CHECK_FALSE(publishProblem(list, ok).has_value());
  }
  for (const char* refused : {"home/lamp/state", "home/a/b/set", "outside", "approval/1"}) {
    CAPTURE(refused);
    auto why = publishProblem(list, refused);
    REQUIRE(why);
    CHECK(why->find("not on the source's publish list (home/+/set, out/#)") != std::string::npos);
  }
  for (const char* wild : {"out/+", "out/#", ""}) {
    CAPTURE(wild);
    auto why = publishProblem(list, wild);
    REQUIRE(why);
    CHECK(why->find("not a topic one can send to") != std::string::npos);
  }
  CHECK(publishProblem({}, "a/b")->find("it has none, so it only receives") != std::string::npos);
}

TEST_CASE("connector: one that dies is started again by the broker after a wait") {
  LogCapture log;
  Mosquitto broker;
  Loop loop;
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  manager.update({mqttSource("house", broker.url(), {"house/#"})});
  Client client(broker.port());
  REQUIRE(waitSubscribed(loop, client, "house/first", 10s));
  REQUIRE(conns.pids().size() == 1);
  ::kill(conns.pids()[0], SIGKILL);
  REQUIRE(loop.until([&] { return log.occurrences("its MQTT connector (pine-mqtt) ended; starting it again") == 1; }, 5s));
  CHECK(manager.notRunning().count("house") == 1);
  REQUIRE(loop.until([&] { return conns.pids().size() == 2; }, 5s));
  CHECK(waitSubscribed(loop, client, "house/second", 10s));
  CHECK(manager.running() == std::vector<std::string>{"house"});
}

TEST_CASE("connector: a TLS session with a login comes back after mosquitto is killed and started again") {
  Secured f(kPassword, true);
  // Plain references: clang 14 cannot capture a structured binding in a lambda.
  [[maybe_unused]] auto& broker = f.broker;
  [[maybe_unused]] auto& loop = f.loop;
  [[maybe_unused]] auto& conns = f.conns;
  [[maybe_unused]] auto& manager = f.manager;
  auto s = withLogin(mqttSource("house", broker.tlsUrl(), {"house/#"}));
  s.caFile = broker.caFile();
  manager.update({s});
  {
    Client client(broker.port(), {}, kUser, kPassword);
    REQUIRE(waitSubscribed(loop, client, "house/before", 10s));
  }
  broker.kill();
  loop.run(700ms);  // the session notices and backs off
  CHECK(manager.running() == std::vector<std::string>{"house"});  // away, reconnecting: still its own
  broker.start();
  Client client(broker.port(), {}, kUser, kPassword);
  CHECK(waitSubscribed(loop, client, "house/after", 15s));
  CHECK(conns.pids().size() == 1);  // the same connector reconnected; none was restarted
}
