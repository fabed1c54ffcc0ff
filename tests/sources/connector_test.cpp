// MQTT with a login and TLS, each session in a real pine-mqtt: a login accepted and a wrong
// one refused with its reason, a secret missing from .env named, a server certificate the
// source does not trust refused and its own CA accepted, and the publish list enforced by the
// connector itself when the broker is bypassed; the backoff's waits; a connector that dies
// started again.
#include <doctest/doctest.h>
#include <signal.h>

#include "common/rpc_link.h"
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

}  // namespace

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
