// MQTT messages per second from a real mosquitto through pine-mqtt and the broker into the
// store (each one delivered to an SSE listener after its commit), against the raw SQLite
// floor measured in the same run (bench/events/bench_floor.h, batches of 100), and, as a
// second floor, the load client's own rate publishing the same messages to mosquitto with
// nobody subscribed: when pine's figure comes near that one, the client is the limit.
//
// The load client (mqtt_publishers.h): PUBLISHERS MQTT connections driven by one thread,
// publishing at QoS 1 with up to WINDOW messages unacknowledged by mosquitto each, and all of
// them together at most 800 ahead of what the SSE listener has seen committed. pine-mqtt acknowledges
// a message only once committed, so what pine has not taken yet waits at mosquitto; its limit
// for such a queue (max_queued_messages, 1000 by default) is lifted here, so that the figure is
// pine's and not mosquitto's drops when the listener or a publisher runs ahead.
//
//   bench-mqtt [MESSAGES [PUBLISHERS [WINDOW]]]     defaults: 20000 messages, 4 publishers, 1000
#include <mosquitto.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/events/bench_client.h"
#include "bench/events/bench_floor.h"
#include "bench/events/bench_process.h"
#include "bench/mqtt/mqtt_publishers.h"
#include "tests/integration/harness.h"
#include "tests/sources/mosquitto_fixture.h"

using namespace pine::test;
using pine::bench::Clock;
using pine::bench::processCpu;
using pine::bench::secs;
using pine::bench::SseCounter;

int main(int argc, char** argv) try {
  setenv("PINE_BIN_DIR", PINE_BUILD_BIN, 0);
  setenv("PINE_SOURCE_DIR", PINE_SOURCE, 0);
  const int total = argc > 1 ? atoi(argv[1]) : 20000, publishers = argc > 2 ? atoi(argv[2]) : 4,
            window = argc > 3 ? atoi(argv[3]) : 1000;
  if (total < publishers || publishers < 1 || window < 1)
    throw std::runtime_error("usage: bench-mqtt [MESSAGES [PUBLISHERS [WINDOW]]], MESSAGES >= PUBLISHERS >= 1");
  mosquitto_lib_init();
  sources_test::MosquittoOptions unbounded;
  unbounded.unboundedQueues = true;
  sources_test::Mosquitto mosquitto(unbounded);
  TempDir dir;

  double floorCpu = 0, floor = pine::bench::rawSqliteRate(dir.path(), total, 100, &floorCpu);
  // mosquitto sends one subscriber at most 20 QoS 1 messages it has not acknowledged (its default
  // max_inflight_messages, kept here), and pine-mqtt acknowledges after the commit: at most 20 a
  // commit. What SQLite itself gives at that size, against the same floor:
  const int inflight = 20;
  double groupCpu = 0, groupFloor = pine::bench::rawSqliteRate(dir.path(), total, inflight, &groupCpu, "raw-groups.db");
  // The load client alone: the same messages, nobody subscribed to them.
  double aloneClientCpu = 0, aloneMosquittoCpu0 = processCpu(mosquitto.pid());
  double clientRate =
      total / pine::bench::publishRaw(mosquitto.port(), "alone", total, publishers, window, nullptr, &aloneClientCpu);
  double aloneMosquittoCpu = processCpu(mosquitto.pid()) - aloneMosquittoCpu0;

  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  // start: always, so no route or subscription is needed (a route would start a run per event).
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "sources:\n  - {name: bench, type: mqtt, url: \"" << mosquitto.url()
      << "\", topics: [\"bench/#\", \"probe\"], start: always}\n";
  Pined pined(home, {}, {});
  pid_t broker = pine::bench::findProgram(pined.pid(), "pine-broker");
  pid_t connector = pine::bench::findProgram(pined.pid(), "pine-mqtt", std::chrono::seconds(20));
  {
    // The source has subscribed once a probe comes through.
    sources_test::Client probe(mosquitto.port());
    bool through = waitUntil(
        [&] {
          probe.publish("probe", "{}");
          auto events = pined.api("GET", "/v1/events?topic=probe").json();
          return events.is_object() && events["events"].is_array() && !events["events"].empty();
        },
        std::chrono::seconds(20));
    if (!through) throw std::runtime_error("no probe reached the store: " + tailOf(pined.stderrText(), 3000));
  }

  SseCounter sse(home, "/v1/events/stream?topic=bench/%23");
  double brokerCpu0 = processCpu(broker), connectorCpu0 = processCpu(connector), mosquittoCpu0 = processCpu(mosquitto.pid());
  double clientCpu = 0;
  auto t0 = Clock::now();
  std::atomic<long> published{0};
  std::atomic<long long> stuckSince{0};
  double publishSecs = pine::bench::publishRaw(mosquitto.port(), "bench", total, publishers, window, [&]() {
    long long now = Clock::now().time_since_epoch().count();
    if (published - sse.count >= 800) {
      // Nothing arrived for 5 s: messages were lost on the way; go on (the count below says so).
      if (stuckSince == 0) stuckSince = now;
      if (now - stuckSince < 5'000'000'000LL) return false;
    }
    stuckSince = 0;
    ++published;
    return true;
  }, &clientCpu);
  // Every message was acknowledged by mosquitto; wait while events still come in.
  long last = -1;
  auto progress = Clock::now();
  while (sse.count < total && !sse.overflowed && secs(progress, Clock::now()) < 10) {
    if (sse.count != last) last = sse.count, progress = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto delivered = Clock::time_point(Clock::duration(sse.lastNs.load()));
  double brokerCpu = processCpu(broker) - brokerCpu0, connectorCpu = processCpu(connector) - connectorCpu0,
         mosquittoCpu = processCpu(mosquitto.pid()) - mosquittoCpu0;
  long arrived = sse.count;
  double rate = arrived / secs(t0, delivered);
  printf("mqtt: %d messages at QoS 1 from %d publishers (up to %d unacknowledged each) through a real mosquitto; "
         "%ld reached the store and an SSE listener%s\n",
         total, publishers, window, arrived, sse.overflowed ? ", THE LISTENER OVERFLOWED" : "");
  printf("  floor: raw SQLite inserts, batches of 100          %8.0f events/s   1\n", floor);
  auto us = [](double cpu, double n) { return cpu / std::max(n, 1.0) * 1e6; };
  printf("  floor: the load client alone, publish -> mosquitto %8.0f msgs/s     %.3f   (CPU a message: client %.1f us, "
         "mosquitto %.1f us)\n",
         clientRate, clientRate / floor, us(aloneClientCpu, total), us(aloneMosquittoCpu, total));
  printf("  raw SQLite inserts, commits of %d (mosquitto's limit in flight to one subscriber) %8.0f events/s   %.3f\n",
         inflight, groupFloor, groupFloor / floor);
  printf("  pine: mosquitto -> pine-mqtt -> store -> delivered %8.0f events/s   %.3f   (target >= 0.4)\n", rate,
         rate / floor);
  printf("  (the load client published them at %.0f msgs/s this time)\n", total / publishSecs);
  printf("  CPU per event: floor %.1f us (the inserting thread); pine-broker %.1f us, pine-mqtt %.1f us; "
         "mosquitto %.1f us, the load client %.1f us\n",
         us(floorCpu, total), us(brokerCpu, arrived), us(connectorCpu, arrived), us(mosquittoCpu, arrived),
         us(clientCpu, total));
  if (arrived < total) {
    printf("  %ld messages did not arrive; what pined's log says of drops:\n", total - arrived);
    std::istringstream log(pined.stderrText());
    std::this_thread::sleep_for(std::chrono::seconds(6));  // the source's counts are saved every 5 s
    auto st = sourceStatus(home, "bench");
    printf("    the source's own count: %lld events, %lld errors, %s; pinectl sources:\n%s\n", st.events, st.errors,
           st.error.c_str(), pined.ctl({"sources"}).out.c_str());
    for (std::string line; std::getline(log, line);)
      if (line.find("dropped") != std::string::npos || line.find("did not take") != std::string::npos ||
          line.find("'bench'") != std::string::npos) printf("    %s\n", line.substr(0, 300).c_str());
  }
  fflush(stdout);
  mosquitto_lib_cleanup();
  return arrived == total ? 0 : 1;
} catch (std::exception& e) {
  fprintf(stderr, "bench-mqtt: %s\n", e.what());
  return 1;
}
