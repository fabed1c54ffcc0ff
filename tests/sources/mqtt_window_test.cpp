// An mqtt source's window of messages handed to the store and not yet committed
// (MqttLink::kWindowMessages), with a real mosquitto and a real pine-mqtt: a store that does not
// commit holds the source at the window (the connector waits; nothing is lost), and once the
// commits come the rest follow, in order, each once.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "broker/sources/mqtt_link.h"
#include "broker/sources/source_manager.h"
#include "tests/sources/mosquitto_fixture.h"

using namespace sources_test;
using namespace std::chrono_literals;

TEST_CASE("mqtt window: a source waits at its window for commits, then the rest follow, none lost") {
  Mosquitto broker;
  Loop loop;
  Connectors conns;
  // A store that has not committed yet: the commit callbacks are held, not called. A message
  // keeps its place in the window until its callback is gone (called, or dropped on a failure).
  std::vector<std::function<void()>> uncommitted;
  std::vector<pine::sources::Draft> drafts;
  pine::sources::Sink sink = [&](pine::sources::Draft d) {
    uncommitted.push_back(std::exchange(d.committed, nullptr));
    drafts.push_back(std::move(d));
  };
  pine::sources::SourceManager manager(loop.io, sink, conns.opener(loop.io), fast());
  manager.update({mqttSource("house", broker.url(), {"house/#"})});
  Client client(broker.port());
  bool subscribed = loop.until(
      [&] {
        client.publish("house/probe", "{}");
        loop.run(100ms);
        return !drafts.empty();
      },
      10s);
  REQUIRE(subscribed);
  loop.run(300ms);
  uncommitted.clear();  // committed (dropping each callback frees its place)
  drafts.clear();

  const size_t window = pine::sources::MqttLink::kWindowMessages, extra = 300;
  for (size_t i = 0; i < window + extra; ++i) client.publish("house/n", std::to_string(i));
  REQUIRE(loop.until([&] { return drafts.size() >= window; }, 20s));
  loop.run(1s);
  // The bound: no more than the window before a commit, although the rest has arrived meanwhile.
  CHECK(drafts.size() == window);

  // The legitimate twin: commits come, and the rest follows, in order, none lost or twice.
  REQUIRE(loop.until(
      [&] {
        uncommitted.clear();
        return drafts.size() >= window + extra;
      },
      20s));
  loop.run(300ms);
  REQUIRE(drafts.size() == window + extra);
  for (size_t i = 0; i < drafts.size(); ++i) CHECK(drafts[i].payload == std::to_string(i));
}
