// SourceManager against a real mosquitto, each session in a real pine-mqtt: wanted only,
// drafts and trust, publish list, payload rules, reconnecting.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>
#include <utility>

#include "broker/sources/payload.h"
#include "tests/sources/mosquitto_fixture.h"

using namespace sources_test;
using namespace std::chrono_literals;
using pine::sources::Draft;
using pine::sources::Sink;
using pine::sources::SourceManager;

namespace {

// SourceManager::publish, waited for.
std::optional<std::string> publish(Loop& loop, SourceManager& m, const std::string& source, const std::string& topic,
                                   const std::string& payload) {
  return m.publish(source, topic, payload).wait(loop.io.waitScope);
}

size_t count(const std::vector<pine::sources::Draft>& drafts, const std::string& topic) {
  size_t n = 0;
  for (const auto& d : drafts) n += d.topic == topic;
  return n;
}

const pine::sources::Draft* find(const std::vector<pine::sources::Draft>& drafts, const std::string& topic) {
  for (const auto& d : drafts)
    if (d.topic == topic) return &d;
  return nullptr;
}

// mosquitto's own count of connected clients ($SYS, retained, refreshed every second).
std::string connectedClients(Client& sys) {
  auto heard = sys.heard();
  for (auto it = heard.rbegin(); it != heard.rend(); ++it)
    if (it->first == "$SYS/broker/clients/connected") return it->second;
  return "";
}

}  // namespace

TEST_CASE("manager: a wanted source hands on messages as untrusted drafts; one marked owner as owner") {
  Mosquitto broker;
  Loop loop;
  Client client(broker.port());
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  auto plain = mqttSource("house", broker.url(), {"house/#"});
  auto mine = mqttSource("mine", broker.url(), {"mine/+"});
  mine.trust = pine::config::Trust::Owner;
  manager.update({plain, mine});
  CHECK(manager.running() == std::vector<std::string>{"house", "mine"});
  REQUIRE(waitSubscribed(loop, client, "house/probe", 10s));
  REQUIRE(waitSubscribed(loop, client, "mine/probe", 10s));

  client.publish("house/lamp", R"({"on": true})");
  client.publish("mine/door", "open");
  client.publish("elsewhere/x", "1");  // subscribed by neither
  REQUIRE(loop.until([&] { return find(loop.drafts, "house/lamp") && find(loop.drafts, "mine/door"); }, 5s));
  const auto* lamp = find(loop.drafts, "house/lamp");
  CHECK(lamp->source == "house");
  CHECK(lamp->trust == "untrusted");
  CHECK(lamp->payload == R"({"on":true})");
  const auto* door = find(loop.drafts, "mine/door");
  CHECK(door->source == "mine");
  CHECK(door->trust == "owner");
  CHECK(door->payload == "\"open\"");
  loop.run(300ms);
  CHECK(count(loop.drafts, "elsewhere/x") == 0);
}

TEST_CASE("manager: a source nobody wants holds no connection and hears nothing; update() starts and stops it") {
  Mosquitto broker;
  Loop loop;
  Client client(broker.port(), {"$SYS/broker/clients/connected"});
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  auto house = mqttSource("house", broker.url(), {"house/#"});

  manager.update({});
  CHECK(manager.running().empty());
  // Only the test's own client is connected.
  CHECK(client.waitHeard([](const std::string& t, const std::string& p) {
    return t == "$SYS/broker/clients/connected" && p == "1";
  }, 5s));
  REQUIRE(client.publishAcked("house/lamp", "before", 5s));  // routed (to nobody) before the source exists
  loop.run(500ms);
  CHECK(loop.drafts.empty());

  manager.update({house});
  CHECK(manager.running() == std::vector<std::string>{"house"});
  REQUIRE(waitSubscribed(loop, client, "house/probe", 10s));
  CHECK(count(loop.drafts, "house/lamp") == 0);  // not retained: what came before was never heard
  CHECK(loop.until([&] { return connectedClients(client) == "2"; }, 5s));

  manager.update({});
  CHECK(manager.running().empty());
  CHECK(loop.until([&] { return connectedClients(client) == "1"; }, 5s));
  size_t before = loop.drafts.size();
  client.publish("house/lamp", "after");
  loop.run(500ms);
  CHECK(loop.drafts.size() == before);

  // Wanted again: it comes back.
  manager.update({house});
  REQUIRE(waitSubscribed(loop, client, "house/again", 10s));
}

TEST_CASE("manager: a changed configuration restarts the source with the new trust and topics") {
  Mosquitto broker;
  Loop loop;
  Client client(broker.port());
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  auto s = mqttSource("house", broker.url(), {"a/#"});
  manager.update({s});
  REQUIRE(waitSubscribed(loop, client, "a/probe", 10s));
  CHECK(find(loop.drafts, "a/probe")->trust == "untrusted");

  s.topics = {"b/#"};
  s.trust = pine::config::Trust::Owner;
  manager.update({s});
  loop.drafts.clear();
  REQUIRE(waitSubscribed(loop, client, "b/probe", 10s));
  CHECK(find(loop.drafts, "b/probe")->trust == "owner");
  client.publish("a/old", "1");
  loop.run(500ms);
  CHECK(count(loop.drafts, "a/old") == 0);
}

TEST_CASE("manager: publish only on the source's publish list, with + and #") {
  Mosquitto broker;
  Loop loop;
  Client listener(broker.port(), {"#"});
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  manager.update({mqttSource("house", broker.url(), {"in/#"}, {"home/+/set", "out/#"}),
                  mqttSource("quiet", broker.url(), {"q/#"})});
  Client prober(broker.port());
  REQUIRE(waitSubscribed(loop, prober, "in/probe", 10s));

  for (const char* ok : {"home/lamp/set", "out", "out/a", "out/a/b"}) {
    CAPTURE(ok);
    CHECK_FALSE(publish(loop, manager, "house", ok, "{\"v\":1}").has_value());
    std::string topic = ok;
    CHECK(listener.waitHeard([&](const std::string& t, const std::string& p) { return t == topic && p == "{\"v\":1}"; },
                             5s));
  }
  for (const char* refused : {"home/lamp/status", "home/a/b/set", "home/set", "outside", "in/x"}) {
    CAPTURE(refused);
    auto why = publish(loop, manager, "house", refused, "1");
    REQUIRE(why);
    CHECK(why->find("not on the source's publish list (home/+/set, out/#)") != std::string::npos);
  }
  // A wildcard is a pattern, not a topic one can send to.
  auto wild = publish(loop, manager, "house", "home/+/set", "1");
  REQUIRE(wild);
  CHECK(wild->find("cannot publish on 'home/+/set'") != std::string::npos);
  auto quiet = publish(loop, manager, "quiet", "q/x", "1");
  REQUIRE(quiet);
  CHECK(quiet->find("only receives") != std::string::npos);
  auto absent = publish(loop, manager, "nobody", "out/x", "1");
  REQUIRE(absent);
  CHECK(absent->find("no running source named 'nobody'") != std::string::npos);
  listener.waitHeard([](const std::string&, const std::string&) { return false; }, 300ms);
  for (const auto& heard : listener.heard()) {
    const auto& t = heard.first;  // not a structured binding: clang 14 cannot capture one
    [[maybe_unused]] const auto& p = heard.second;
    CAPTURE(t);
    CHECK(t.rfind("home/lamp/status", 0) != 0);
    CHECK(t != "outside");
    CHECK(t != "q/x");
  }
}

TEST_CASE("manager: invalid UTF-8 becomes U+FFFD, oversize messages are dropped with a log line") {
  LogCapture log;
  Mosquitto broker;
  Loop loop;
  Client client(broker.port());
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  manager.update({mqttSource("house", broker.url(), {"house/#"})});
  REQUIRE(waitSubscribed(loop, client, "house/probe", 10s));

  client.publish("house/bytes", "\xff" "ok");
  client.publish("house/big", std::string(pine::sources::kMaxPayloadBytes + 1, 'x'));
  client.publish("house/limit", std::string(pine::sources::kMaxPayloadBytes, 'x'));
  REQUIRE(loop.until([&] { return find(loop.drafts, "house/bytes") && find(loop.drafts, "house/limit"); }, 5s));
  CHECK(find(loop.drafts, "house/bytes")->payload == "\"\xef\xbf\xbd" "ok\"");
  CHECK(find(loop.drafts, "house/limit")->payload.size() == pine::sources::kMaxPayloadBytes + 2);
  CHECK(count(loop.drafts, "house/big") == 0);
  CHECK(log.occurrences("dropped a message of 262145 bytes on topic house/big:") == 1);
  // A sender that keeps sending them: still that one line in the next 10 s, not one a message.
  for (int i = 0; i < 30; ++i) client.publish("house/big", std::string(pine::sources::kMaxPayloadBytes + 1, 'x'));
  client.publish("house/after", "x");
  REQUIRE(loop.until([&] { return find(loop.drafts, "house/after") != nullptr; }, 5s));
  loop.run(std::chrono::milliseconds(300));
  CHECK(log.occurrences("dropped a message of 262145 bytes") == 1);
  CHECK(count(loop.drafts, "house/big") == 0);
}

TEST_CASE("manager: a message far over 256 KiB is never sent to pine-mqtt, whose memory stays flat; one at the limit arrives") {
  LogCapture log;
  Mosquitto broker;
  Loop loop;
  Client client(broker.port());
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  manager.update({mqttSource("house", broker.url(), {"house/#"})});
  REQUIRE(waitSubscribed(loop, client, "house/probe", 10s));
  REQUIRE(conns.pids().size() == 1);
  const pid_t connector = conns.pids().front();
  const long before = peakKb(connector);
  REQUIRE(before > 0);
  // The server keeps the order: had pine-mqtt been sent the 32 MB message, it would have read it
  // whole (libmosquitto does) before the next one arrived.
  client.publish("house/huge", std::string(32u << 20, 'x'));
  client.publish("house/limit", std::string(pine::sources::kMaxPayloadBytes, 'x'));
  REQUIRE(loop.until([&] { return find(loop.drafts, "house/limit") != nullptr; }, 20s));
  CHECK(count(loop.drafts, "house/huge") == 0);
  const long after = peakKb(connector);
  CHECK_MESSAGE(after - before < 8 * 1024, "pine-mqtt's peak grew from ", before, " to ", after, " KiB");
  CHECK(find(loop.drafts, "house/limit")->payload.size() == pine::sources::kMaxPayloadBytes + 2);
}

TEST_CASE("manager: topics changed and put back: nothing lost between, nothing twice after, a dropped filter unsubscribed") {
  LogCapture log;
  Mosquitto broker;
  Loop loop;
  Client client(broker.port());
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  const auto both = mqttSource("house", broker.url(), {"t/#", "u/#"}), one = mqttSource("house", broker.url(), {"t/#"});
  manager.update({both});
  REQUIRE(waitSubscribed(loop, client, "u/probe", 10s));
  // Sent while the change is under way: the old session stops, the new one is not there yet.
  for (int i = 0; i < 10; ++i) client.publish("t/a" + std::to_string(i), std::to_string(i));
  manager.update({one});
  for (int i = 10; i < 20; ++i) client.publish("t/a" + std::to_string(i), std::to_string(i));
  REQUIRE(waitSubscribed(loop, client, "t/probe", 10s));
  client.publish("u/gone", "1");  // no longer listed: the server is told, and sends it no more
  for (int i = 0; i < 20; ++i) client.publish("t/b" + std::to_string(i), std::to_string(i));
  REQUIRE(loop.until([&] { return find(loop.drafts, "t/b19") != nullptr; }, 10s));
  // Back to the first list, whose session (before: a client id per topic list) had everything
  // since kept for it, and sent it all again.
  manager.update({both});
  REQUIRE(waitSubscribed(loop, client, "u/probe2", 10s));
  loop.run(1500ms);
  for (const char* p : {"t/a", "t/b"})
    for (int i = 0; i < 20; ++i) {
      CAPTURE(p);
      CAPTURE(i);
      CHECK(count(loop.drafts, p + std::to_string(i)) == 1);  // before: t/a10..19 none, all of t/b twice
    }
  CHECK(count(loop.drafts, "u/gone") == 0);
  CHECK(log.occurrences("not one of the source's topics") == 0);  // unsubscribed, not heard and dropped
}

TEST_CASE("manager: messages on pine's own topics are dropped, others pass") {
  LogCapture log;
  Mosquitto broker;
  Loop loop;
  Client client(broker.port());
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  manager.update({mqttSource("everything", broker.url(), {"#"})});
  REQUIRE(waitSubscribed(loop, client, "house/probe", 10s));
  client.publish("approval/123", "{\"answer\":\"yes\"}");
  client.publish("agent/main", "x");
  client.publish("house/after", "x");
  REQUIRE(loop.until([&] { return find(loop.drafts, "house/after") != nullptr; }, 5s));
  CHECK(count(loop.drafts, "approval/123") == 0);
  CHECK(count(loop.drafts, "agent/main") == 0);
  CHECK(log.occurrences("dropped a message on \"approval/123\": that is pine's own topic space") == 1);
}

TEST_CASE("manager: a flooding source waits on the store, stays bounded, and does not hold up another") {
  LogCapture log;
  // mosquitto keeps the whole flood for the source, which has not acknowledged it: the flood waits
  // at the server, not in pine.
  MosquittoOptions unbounded;
  unbounded.unboundedQueues = true;
  Mosquitto broker(unbounded);
  Loop loop;
  Client client(broker.port());
  Connectors conns;
  // A store that stalls on the flooding source: its drafts are kept, their commits held back.
  std::vector<std::function<void()>> held;
  size_t mostHeld = 0;
  Sink stalling = [&](Draft d) {
    if (d.topic.rfind("flood/", 0) == 0 && d.topic != "flood/probe") {
      held.push_back(std::move(d.committed));
      mostHeld = std::max(mostHeld, held.size());
    } else if (d.committed) {
      std::exchange(d.committed, nullptr)();
    }
    loop.drafts.push_back(std::move(d));
  };
  SourceManager manager(loop.io, stalling, conns.opener(loop.io), fast());
  manager.update({mqttSource("flood", broker.url(), {"flood/#"}), mqttSource("quiet", broker.url(), {"quiet/#"})});
  REQUIRE(waitSubscribed(loop, client, "flood/probe", 10s));
  REQUIRE(waitSubscribed(loop, client, "quiet/probe", 10s));

  const std::string kib2(2048, 'x');
  const int total = 20000;
  for (int i = 0; i < total; ++i) client.publish("flood/x", kib2);  // 40 MB
  loop.run(3000ms);
  // What waits on the store is one batch of the connector (at most 512 KiB of messages), not the flood.
  CHECK(!held.empty());
  CHECK_MESSAGE(mostHeld <= 512 / 2 + 1, "drafts waiting on the store: " << mostHeld);
  // The other source is heard while the flood waits.
  client.publish("quiet/hello", "1");
  CHECK(loop.until([&] { return find(loop.drafts, "quiet/hello") != nullptr; }, 15s));
  // The store catches up: the flood goes on to its end, none of it lost on the way.
  auto release = [&] {
    auto commits = std::move(held);
    held.clear();
    for (auto& c : commits)
      if (c) c();
  };
  CHECK(loop.until([&] {
    release();
    return count(loop.drafts, "flood/x") >= size_t(total);
  }, 120s));
  CHECK(count(loop.drafts, "flood/x") == size_t(total));
  CHECK(log.occurrences("dropped") == 0);

  // Legitimate twin: bursts the store keeps up with arrive whole, nothing dropped. Each burst of 500
  // stays under what mosquitto itself queues for a subscriber (1000 by default), which a sanitizer
  // build on a loaded machine would otherwise meet first.
  loop.until([&] { release(); return false; }, 2000ms);
  size_t start = count(loop.drafts, "quiet/burst");
  for (int burst = 1; burst <= 4; ++burst) {
    for (int i = 0; i < 500; ++i) client.publish("quiet/burst", "\"" + std::to_string(i) + "\"");
    CHECK(loop.until([&] { return count(loop.drafts, "quiet/burst") == start + 500 * size_t(burst); }, 30s));
  }
}

TEST_CASE("manager: reconnects after mosquitto restarts") {
  Mosquitto broker;
  Loop loop;
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  manager.update({mqttSource("house", broker.url(), {"house/#"})});
  {
    Client client(broker.port());
    REQUIRE(waitSubscribed(loop, client, "house/first", 10s));
  }
  broker.stop();
  loop.run(1500ms);  // the source notices and starts backing off
  CHECK(manager.running() == std::vector<std::string>{"house"});
  broker.start();
  Client client(broker.port());
  CHECK(waitSubscribed(loop, client, "house/second", 15s));  // subscribed again on the new connection
}

TEST_CASE("manager: a source started before its broker is up connects once it is") {
  Mosquitto broker;
  broker.stop();
  Loop loop;
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  manager.update({mqttSource("house", broker.url(), {"house/#"})});
  loop.run(500ms);
  broker.start();
  Client client(broker.port());
  CHECK(waitSubscribed(loop, client, "house/late", 15s));
}

TEST_CASE("manager: a source that cannot run here is logged once and not started") {
  LogCapture log;
  Loop loop;
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  pine::config::Source folder;  // an ftp source without its services (no pined to list through)
  folder.name = "drop";
  folder.type = "ftp";
  manager.update({folder});
  manager.update({folder});
  CHECK(manager.running().empty());
  CHECK(log.occurrences("source 'drop': a source of type 'ftp' cannot run here") == 1);
  auto bad = mqttSource("bad", "mqtt://user:pw@127.0.0.1:1", {"x"});
  manager.update({folder, bad});
  CHECK(manager.running().empty());
  CHECK(manager.notRunning()["bad"].find("credentials") != std::string::npos);
  CHECK(log.occurrences("pw@") == 0);
}

TEST_CASE("manager: while its broker is away a source refuses to publish, and stops promptly when unwanted") {
  Mosquitto broker;
  Loop loop;
  Connectors conns;
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), fast());
  manager.update({mqttSource("house", broker.url(), {"house/#"}, {"out/#"})});
  {
    Client client(broker.port());
    REQUIRE(waitSubscribed(loop, client, "house/first", 10s));
  }
  CHECK_FALSE(publish(loop, manager, "house", "out/x", "1").has_value());
  broker.stop();
  loop.run(300ms);
  auto why = publish(loop, manager, "house", "out/x", "1");
  REQUIRE(why);
  CHECK(why->find("not connected to its MQTT server right now") != std::string::npos);
  auto began = std::chrono::steady_clock::now();
  manager.update({});  // in the middle of backing off
  CHECK(std::chrono::steady_clock::now() - began < 2s);
  CHECK(manager.running().empty());
}

namespace {

// What a source remembers, in memory only: it outlives the managers that use it, as the store does.
struct MapMemory final : pine::sources::SourceMemory {
  std::map<std::string, std::map<std::string, std::string>> kept;
  std::map<std::string, std::string> recall(const std::string& s) override { return kept[s]; }
  void remember(const std::string& s, const std::string& k, const std::string& v) override { kept[s][k] = v; }
  void rememberAll(const std::string& s, const std::map<std::string, std::string>& values) override {
    for (auto& [k, v] : values) kept[s][k] = v;
  }
  void forget(const std::string& s, const std::string& k) override { kept[s].erase(k); }
  void forgetAll(const std::string& s) override { kept.erase(s); }
  void noteError(const std::string&, const std::string&) override {}
};

}  // namespace

TEST_CASE("manager: a retained message is delivered once, not again at each new subscription; a new value is") {
  Mosquitto broker;
  Loop loop;
  Client client(broker.port());
  Connectors conns;
  auto memory = std::make_shared<MapMemory>();
  auto options = fast();
  options.memory = memory;
  auto house = mqttSource("house", broker.url(), {"house/#"});
  auto on = [&](const std::string& topic) {
    std::vector<std::string> out;
    for (const auto& d : loop.drafts)
      if (d.topic == topic) out.push_back(d.payload);
    return out;
  };
  auto states = [&] { return on("house/state"); };
  client.publish("house/state", "\"on\"", true);
  loop.run(300ms);
  {
    SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), options);
    manager.update({house});
    REQUIRE(loop.until([&] { return states().size() == 1; }, 10s));  // the stored value, once
    REQUIRE(waitSubscribed(loop, client, "house/probe", 10s));
    client.publish("house/state", "\"off\"", true);  // live: heard as it is published
    REQUIRE(loop.until([&] { return states().size() == 2; }, 5s));
    // A topic first heard live, its value retained: the server sends it again at the next
    // subscription, with the flag this time.
    client.publish("house/new", "1", true);
    REQUIRE(loop.until([&] { return on("house/new").size() == 1; }, 5s));
  }
  // Started again (a restart of pined, a reconnect): the server sends "off" again; it is the last
  // message heard on its topic.
  {
    SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), options);
    manager.update({house});
    REQUIRE(waitSubscribed(loop, client, "house/probe2", 10s));
    loop.run(300ms);
    CHECK(states() == std::vector<std::string>{"\"on\"", "\"off\""});
    CHECK(on("house/new").size() == 1);
    CHECK(manager.running() == std::vector<std::string>{"house"});
  }
  // The legitimate twin: changed while nobody listened, the new stored value is delivered.
  client.publish("house/state", "\"dim\"", true);
  loop.run(300ms);
  SourceManager manager(loop.io, loop.sink(), conns.opener(loop.io), options);
  manager.update({house});
  REQUIRE(loop.until([&] { return states().size() == 3; }, 10s));
  CHECK(states().back() == "\"dim\"");
  // Another server's topics are other topics: what was kept goes with the server it came from.
  auto moved = house;
  moved.url = "mqtt://127.0.0.1:1";
  CHECK(memory->kept["house"].count("house/state") == 1);  // saved when the link went
  CHECK(memory->kept["house"].count("#server") == 1);
  pine::sources::Sink sink = loop.sink();
  pine::sources::OpenConnector open = conns.opener(loop.io);
  pine::sources::MqttLink other(loop.io, moved, sink, open, {200, 1000}, memory);
  CHECK(memory->kept["house"].size() == 1);  // only the new server's note
}
