// MQTT messages per second from a real mosquitto through pine-mqtt and the broker into the
// store (each one delivered to an SSE listener after its commit), against the raw SQLite
// floor measured in the same run (bench/events/bench_floor.h, batches of 100), and, as a
// second floor, the load client's own rate publishing the same messages to mosquitto with
// nobody subscribed: when pine's figure comes near that one, the client is the limit.
//
// The load client: PUBLISHERS libmosquitto clients, each on its own network thread,
// publishing at QoS 1 with up to WINDOW messages unacknowledged by mosquitto, and all of them
// together at most 800 ahead of what the SSE listener has seen committed. pine-mqtt acknowledges
// a message only once committed, so what pine has not taken yet waits at mosquitto; its limit
// for such a queue (max_queued_messages, 1000 by default) is lifted here, so that the figure is
// pine's and not mosquitto's drops when the listener or a publisher runs ahead.
//
//   bench-mqtt [MESSAGES [PUBLISHERS [WINDOW]]]     defaults: 20000 messages, 4 publishers, 1000
#include <mosquitto.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/events/bench_client.h"
#include "bench/events/bench_floor.h"
#include "bench/events/bench_process.h"
#include "tests/integration/harness.h"
#include "tests/sources/mosquitto_fixture.h"

using namespace pine::test;
using pine::bench::Clock;
using pine::bench::processCpu;
using pine::bench::secs;
using pine::bench::SseCounter;

namespace {

// One publisher: a libmosquitto client that keeps at most `window` QoS 1 messages unacknowledged.
class Publisher {
 public:
  Publisher(int port, int window) : window_(window) {
    mosq_ = mosquitto_new(nullptr, true, this);
    if (!mosq_) throw std::runtime_error("mosquitto_new failed");
    mosquitto_int_option(mosq_, MOSQ_OPT_SEND_MAXIMUM, window);
    mosquitto_max_inflight_messages_set(mosq_, (unsigned)window);
    mosquitto_connect_callback_set(mosq_, [](mosquitto*, void* self, int rc) {
      auto* p = static_cast<Publisher*>(self);
      std::lock_guard<std::mutex> l(p->mu_);
      p->connected_ = rc == 0 ? 1 : -1;
      p->cv_.notify_all();
    });
    mosquitto_publish_callback_set(mosq_, [](mosquitto*, void* self, int) {
      auto* p = static_cast<Publisher*>(self);
      std::lock_guard<std::mutex> l(p->mu_);
      ++p->acked_;
      p->cv_.notify_all();
    });
    if (mosquitto_connect(mosq_, "127.0.0.1", port, 60) != MOSQ_ERR_SUCCESS)
      throw std::runtime_error("the load client cannot connect to mosquitto on port " + std::to_string(port));
    mosquitto_loop_start(mosq_);
    std::unique_lock<std::mutex> l(mu_);
    if (!cv_.wait_for(l, std::chrono::seconds(10), [&] { return connected_ != 0; }) || connected_ < 0)
      throw std::runtime_error("mosquitto did not accept the load client");
  }
  ~Publisher() {
    mosquitto_disconnect(mosq_);
    mosquitto_loop_stop(mosq_, false);
    mosquitto_destroy(mosq_);
  }
  // Publishes `n` messages on `topic`/<i % 8> and returns once mosquitto acknowledged all of them.
  // `mayPublish`, when set, is asked before each message (and polled while it says no).
  void run(const std::string& topic, int first, int n, const std::function<bool()>& mayPublish) {
    for (int i = first; i < first + n; ++i) {
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return sent_ - acked_ < window_; });
      }
      while (mayPublish && !mayPublish()) std::this_thread::sleep_for(std::chrono::microseconds(200));
      std::string t = topic + "/t" + std::to_string(i % 8), payload = "{\"n\":" + std::to_string(i) + "}";
      int rc = mosquitto_publish(mosq_, nullptr, t.c_str(), (int)payload.size(), payload.data(), 1, false);
      if (rc != MOSQ_ERR_SUCCESS) throw std::runtime_error(std::string("publishing: ") + mosquitto_strerror(rc));
      std::lock_guard<std::mutex> l(mu_);
      ++sent_;
    }
    std::unique_lock<std::mutex> l(mu_);
    if (!cv_.wait_for(l, std::chrono::seconds(60), [&] { return acked_ >= sent_; }))
      throw std::runtime_error("mosquitto did not acknowledge every message within 60 s");
  }

 private:
  mosquitto* mosq_ = nullptr;
  int window_;
  std::mutex mu_;
  std::condition_variable cv_;
  int connected_ = 0;
  long sent_ = 0, acked_ = 0;
};

// Publishes `total` messages under `topic` from `publishers` clients at once; returns the seconds
// from the first publish to the last acknowledgement.
double publishAll(int port, const std::string& topic, int total, int publishers, int window,
                  const std::function<bool()>& mayPublish = nullptr) {
  std::vector<std::unique_ptr<Publisher>> clients;
  for (int p = 0; p < publishers; ++p) clients.push_back(std::make_unique<Publisher>(port, window));
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  auto t0 = Clock::now();
  for (int p = 0; p < publishers; ++p)
    threads.emplace_back([&, p] {
      int share = total / publishers + (p < total % publishers ? 1 : 0), first = 0;
      for (int q = 0; q < p; ++q) first += total / publishers + (q < total % publishers ? 1 : 0);
      try {
        clients[p]->run(topic, first, share, mayPublish);
      } catch (std::exception& e) {
        fprintf(stderr, "bench-mqtt: publisher %d: %s\n", p, e.what());
        ++failed;
      }
    });
  for (auto& t : threads) t.join();
  if (failed) throw std::runtime_error("a publisher failed (above)");
  return secs(t0, Clock::now());
}

}  // namespace

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
  // The load client alone: the same messages, nobody subscribed to them.
  double clientRate = total / publishAll(mosquitto.port(), "alone", total, publishers, window);

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
  double brokerCpu0 = processCpu(broker), connectorCpu0 = processCpu(connector);
  auto t0 = Clock::now();
  std::atomic<long> published{0};
  std::atomic<long long> stuckSince{0};
  double publishSecs = publishAll(mosquitto.port(), "bench", total, publishers, window, [&]() {
    long long now = Clock::now().time_since_epoch().count();
    if (published - sse.count >= 800) {
      // Nothing arrived for 5 s: messages were lost on the way; go on (the count below says so).
      if (stuckSince == 0) stuckSince = now;
      if (now - stuckSince < 5'000'000'000LL) return false;
    }
    stuckSince = 0;
    ++published;
    return true;
  });
  // Every message was acknowledged by mosquitto; wait while events still come in.
  long last = -1;
  auto progress = Clock::now();
  while (sse.count < total && !sse.overflowed && secs(progress, Clock::now()) < 10) {
    if (sse.count != last) last = sse.count, progress = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto delivered = Clock::time_point(Clock::duration(sse.lastNs.load()));
  double brokerCpu = processCpu(broker) - brokerCpu0, connectorCpu = processCpu(connector) - connectorCpu0;
  long arrived = sse.count;
  double rate = arrived / secs(t0, delivered);
  printf("mqtt: %d messages at QoS 1 from %d publishers (up to %d unacknowledged each) through a real mosquitto; "
         "%ld reached the store and an SSE listener%s\n",
         total, publishers, window, arrived, sse.overflowed ? ", THE LISTENER OVERFLOWED" : "");
  printf("  floor: raw SQLite inserts, batches of 100          %8.0f events/s   1\n", floor);
  printf("  floor: the load client alone, publish -> mosquitto %8.0f msgs/s     %.3f\n", clientRate,
         clientRate / floor);
  printf("  pine: mosquitto -> pine-mqtt -> store -> delivered %8.0f events/s   %.3f   (target >= 0.4)\n", rate,
         rate / floor);
  printf("  (the load client published them at %.0f msgs/s this time)\n", total / publishSecs);
  printf("  CPU per event: floor %.1f us (the inserting thread); pine-broker %.1f us, pine-mqtt %.1f us\n",
         floorCpu / total * 1e6, brokerCpu / (double)std::max(arrived, 1L) * 1e6,
         connectorCpu / (double)std::max(arrived, 1L) * 1e6);
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
