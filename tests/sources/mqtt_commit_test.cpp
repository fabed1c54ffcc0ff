// An mqtt source acknowledges a message to the MQTT server only once the broker committed it,
// with a real mosquitto and a real pine-mqtt: a store that does not commit holds the source at
// one batch (the rest waits at the server), a connector killed before a commit leaves its
// messages with the server, which sends them again to the next connector of the source, and
// what was committed is not sent again.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "broker/sources/source_manager.h"
#include "mqtt/session.h"
#include "tests/sources/mosquitto_fixture.h"

using namespace sources_test;
using namespace std::chrono_literals;

namespace {

// A store whose commits the test makes: each draft's callback is held until commit().
struct HeldStore {
  std::vector<std::function<void()>> uncommitted;
  std::vector<pine::sources::Draft> drafts;
  bool autoCommit = false;
  pine::sources::Sink sink() {
    return [this](pine::sources::Draft d) {
      auto done = std::exchange(d.committed, nullptr);
      if (autoCommit && done) done();
      else uncommitted.push_back(std::move(done));
      drafts.push_back(std::move(d));
    };
  }
  void commit() {
    for (auto& c : std::exchange(uncommitted, {}))
      if (c) c();
  }
  size_t count(const std::string& payload, size_t from = 0) const {
    return static_cast<size_t>(std::count_if(drafts.begin() + static_cast<long>(from), drafts.end(),
                                             [&](const pine::sources::Draft& d) { return d.payload == payload; }));
  }
};

// A real mosquitto, a source 'house' on house/# through a real pine-mqtt, the store above, and a
// client to publish with; ready once the source has subscribed (its probes committed and cleared).
struct HouseSource {
  Mosquitto broker;
  Loop loop;
  Connectors conns;
  HeldStore store;
  pine::sources::SourceManager manager;
  Client client;
  explicit HouseSource(MosquittoOptions options = {})
      : broker(options), manager(loop.io, store.sink(), conns.opener(loop.io), fast()), client(broker.port()) {
    manager.update({mqttSource("house", broker.url(), {"house/#"})});
    bool subscribed = loop.until(
        [&] {
          client.publish("house/probe", "{}");
          loop.run(100ms);
          store.commit();
          return !store.drafts.empty();
        },
        10s);
    REQUIRE(subscribed);
    loop.run(300ms);
    store.commit();
    store.drafts.clear();
  }
};

}  // namespace

TEST_CASE("mqtt commit: a store that does not commit holds the source at one batch; commits bring the rest, none lost or twice") {
  // The rest waits at the server: mosquitto's own limit (1000 queued by default) must not be what drops it.
  MosquittoOptions options;
  options.unboundedQueues = true;
  HouseSource f(options);
  // Plain references: clang 14 cannot capture a structured binding in a lambda.
  [[maybe_unused]] auto& loop = f.loop;
  [[maybe_unused]] auto& conns = f.conns;
  [[maybe_unused]] auto& store = f.store;
  [[maybe_unused]] auto& manager = f.manager;
  [[maybe_unused]] auto& client = f.client;

  const size_t total = 1500;
  for (size_t i = 0; i < total; ++i) client.publish("house/n", std::to_string(i));
  REQUIRE(loop.until([&] { return !store.drafts.empty(); }, 20s));
  loop.run(1s);
  // The bound: one batch, and nothing more while it is not committed, although the rest has
  // been published meanwhile (it waits at the server, which has no acknowledgement yet).
  size_t held = store.drafts.size();
  CHECK(held <= pine::mqtt::kBatchMessages);
  CHECK(held < total);
  loop.run(500ms);
  CHECK(store.drafts.size() == held);

  // The legitimate twin: commits come, and the rest follows, in order, none lost or twice.
  REQUIRE(loop.until(
      [&] {
        store.commit();
        return store.drafts.size() >= total;
      },
      30s));
  loop.run(300ms);
  store.commit();
  REQUIRE(store.drafts.size() == total);
  for (size_t i = 0; i < store.drafts.size(); ++i) CHECK(store.drafts[i].payload == std::to_string(i));
}

TEST_CASE("mqtt commit: a connector killed before the commit leaves its messages with the server; committed ones are not sent again") {
  HouseSource f;
  // Plain references: clang 14 cannot capture a structured binding in a lambda.
  [[maybe_unused]] auto& loop = f.loop;
  [[maybe_unused]] auto& conns = f.conns;
  [[maybe_unused]] auto& store = f.store;
  [[maybe_unused]] auto& manager = f.manager;
  [[maybe_unused]] auto& client = f.client;

  // Heard, handed to the broker, never committed: so never acknowledged.
  for (int i = 0; i < 5; ++i) client.publish("house/a", "\"a" + std::to_string(i) + "\"");
  REQUIRE(loop.until([&] { return store.count("\"a0\"") == 1; }, 10s));
  loop.run(300ms);
  REQUIRE(conns.pids().size() == 1);
  ::kill(conns.pids()[0], SIGKILL);
  REQUIRE(loop.until([&] { return manager.notRunning().count("house") == 1; }, 5s));
  store.uncommitted.clear();  // the dead connector's batch: its commits will never come
  // Published while no connector of the source runs: the server keeps them for its session.
  for (int i = 0; i < 3; ++i) REQUIRE(client.publishAcked("house/b", "\"b" + std::to_string(i) + "\"", 5s));

  store.autoCommit = true;
  size_t restart = store.drafts.size();
  auto all = [&](size_t from) {
    for (int i = 0; i < 5; ++i)
      if (store.count("\"a" + std::to_string(i) + "\"", from) == 0) return false;
    for (int i = 0; i < 3; ++i)
      if (store.count("\"b" + std::to_string(i) + "\"", from) == 0) return false;
    return true;
  };
  REQUIRE(loop.until([&] { return conns.pids().size() == 2; }, 5s));
  CHECK(loop.until([&] { return all(restart); }, 15s));
  loop.run(500ms);
  for (int i = 0; i < 5; ++i) CHECK(store.count("\"a" + std::to_string(i) + "\"", restart) == 1);
  for (int i = 0; i < 3; ++i) CHECK(store.count("\"b" + std::to_string(i) + "\"", restart) == 1);

  // The twin: all of those were committed, so acknowledged; the next connector hears only what is new.
  loop.run(500ms);  // the acknowledgements leave after the commits
  ::kill(conns.pids()[1], SIGKILL);
  REQUIRE(loop.until([&] { return conns.pids().size() == 3; }, 5s));
  size_t second = store.drafts.size();
  REQUIRE(client.publishAcked("house/c", "\"c0\"", 5s));
  REQUIRE(loop.until([&] { return store.count("\"c0\"", second) == 1; }, 15s));
  loop.run(500ms);
  CHECK(store.drafts.size() == second + 1);
}

TEST_CASE("mqtt commit: a commit that fails is not acknowledged: the session reconnects and the server sends it again") {
  LogCapture log;
  HouseSource f;
  // Plain references: clang 14 cannot capture a structured binding in a lambda.
  [[maybe_unused]] auto& loop = f.loop;
  [[maybe_unused]] auto& conns = f.conns;
  [[maybe_unused]] auto& store = f.store;
  [[maybe_unused]] auto& manager = f.manager;
  [[maybe_unused]] auto& client = f.client;

  client.publish("house/door", "\"open\"");
  REQUIRE(loop.until([&] { return store.count("\"open\"") == 1; }, 10s));
  store.uncommitted.clear();  // the store failed: each callback dropped uncalled
  REQUIRE(loop.until([&] { return log.occurrences("the broker did not commit the last messages") == 1; }, 10s));
  store.autoCommit = true;
  CHECK(loop.until([&] { return store.count("\"open\"") == 2; }, 15s));
  // Heard twice, committed once: the first time it was never acknowledged.
  loop.run(500ms);
  CHECK(store.count("\"open\"") == 2);
  CHECK(conns.pids().size() == 1);  // the same connector: only its MQTT connection was dropped
}

namespace {
// The test stands where pine-mqtt would: it serves no session, it only sends batches.
struct NoSession final : public pine::proto::mqtt::MqttSession::Server {};
}  // namespace

TEST_CASE("mqtt commit: the broker answers a batch only once it is committed, and drops what the source did not subscribe to") {
  LogCapture log;
  Loop loop;
  HeldStore store;
  kj::Own<kj::AsyncCapabilityStream> connectorEnd;
  pine::sources::OpenConnector open =
      [&](const pine::config::Source&) -> kj::Promise<kj::Own<kj::AsyncCapabilityStream>> {
    auto pipe = loop.io.provider->newCapabilityPipe();
    connectorEnd = kj::mv(pipe.ends[1]);
    return kj::mv(pipe.ends[0]);
  };
  pine::sources::SourceManager manager(loop.io, store.sink(), open, fast());
  manager.update({mqttSource("house", "mqtt://127.0.0.1:1", {"house/#"})});
  REQUIRE(loop.until([&] { return connectorEnd.get() != nullptr; }, 5s));
  pine::RpcLink link(kj::mv(connectorEnd), capnp::rpc::twoparty::Side::CLIENT, kj::heap<NoSession>(),
                     pine::LinkLimits{0, 1 << 17});
  auto events = link.peer().castAs<pine::proto::mqtt::MqttEvents>();

  auto req = events.messagesRequest();
  auto list = req.initMessages(2);
  const char* topics[] = {"house/door", "garden/gate"};
  for (unsigned i = 0; i < 2; ++i) {
    list[i].setTopic(topics[i]);
    list[i].setPayload(kj::StringPtr("\"open\"").asBytes());
  }
  bool answered = false;
  auto sent = req.send().then([&](auto&&) { answered = true; }).eagerlyEvaluate(nullptr);
  loop.run(300ms);
  // Only the source's own topic became an event; the batch is not answered before its commit.
  REQUIRE(store.drafts.size() == 1);
  CHECK(store.drafts[0].topic == "house/door");
  CHECK_FALSE(answered);
  CHECK(log.occurrences("on \"garden/gate\": not one of the source's topics") == 1);
  store.commit();
  CHECK(loop.until([&] { return answered; }, 2s));
}
