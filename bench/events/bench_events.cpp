// Events per second from HTTP publish to the durable store to delivery (an SSE
// listener receives each one after routing), against raw SQLite inserts with
// the same batching, measured in the same run; and the overhead of an approval
// (requested, approved through the API at once, the worker resumes), from runs
// with and without one, alternating: difference of medians and median of the
// paired differences, with their spread, because on a shared machine the noise
// is larger than the target.
//
// Also single events from 16 concurrent senders (each request one event, answered once committed),
// against the same floor.
//
//   bench-events [EVENTS [RUNS [singles]]]     defaults: 40000 events, 25 runs of each kind
//   ("singles": only the floor and the single-event case, for profiling the broker on it)
#include <openssl/rand.h>
#include <sqlite3.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/events/bench_client.h"
#include "bench/events/bench_floor.h"
#include "bench/events/bench_process.h"
#include "bench/events/bench_senders.h"
#include "tests/integration/harness.h"

using pine::bench::Clock;
using namespace pine::test;
using pine::bench::Conn;
using pine::bench::median;
using pine::bench::percentile;
using pine::bench::processCpu;
using pine::bench::rawSqliteRate;
using pine::bench::secs;
using pine::bench::SendResult;
using pine::bench::sendEach;
using pine::bench::TrivialServer;
using pine::bench::SseCounter;

namespace {

// One message to `agent` with a streamed answer, answering each approval at once through the API,
// as an owner's client that approves immediately would. Returns the run's wall time in ms and, for a
// run that asked, the time from the question reaching the client to the decision reaching it.
struct Run {
  double ms = 0, askedToDecidedMs = 0;
  int approvals = 0;
};

Run runOnce(const std::string& home, const std::string& agent) {
  Conn stream(home), answer(home);
  Run run;
  auto start = Clock::now(), asked = start;
  if (!stream.openStream("POST", "/v1/agents/" + agent + "/messages", R"({"text": "go", "stream": true})"))
    throw std::runtime_error("POST /v1/agents/" + agent + "/messages did not stream");
  Conn::Event ev;
  while (stream.nextEvent(&ev)) {
    auto j = nlohmann::json::parse(ev.data, nullptr, false);
    std::string state = ev.name == "approval" && j.contains("approval") ? j["approval"].value("state", "") : "";
    if (state == "pending") {
      asked = Clock::now();
      std::string id = j["approval"].value("id", "");
      int status = answer.request("POST", "/v1/approvals/" + id + "/approve", "{}");
      if (status != 200) throw std::runtime_error("approving " + id + " answered " + std::to_string(status));
      ++run.approvals;
    } else if (state == "approved") {
      run.askedToDecidedMs = secs(asked, Clock::now()) * 1000;
    } else if (ev.name == "done") {
      if (j.value("state", "") != "done")
        throw std::runtime_error("the " + agent + " run ended '" + j.value("state", "?") + "': " + ev.data);
      run.ms = secs(start, Clock::now()) * 1000;
      return run;
    }
  }
  throw std::runtime_error("the " + agent + " stream ended without 'done'");
}

}  // namespace

int main(int argc, char** argv) try {
  setenv("PINE_BIN_DIR", PINE_BUILD_BIN, 0);
  setenv("PINE_SOURCE_DIR", PINE_SOURCE, 0);
  int total = argc > 1 ? atoi(argv[1]) : 40000;
  const int batch = 100, clients = 2, runs = argc > 2 ? atoi(argv[2]) : 25;
  const bool onlySingles = argc > 3 && std::string(argv[3]) == "singles";
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main", "asker"});
  // A route is evaluated for every event; none matches the benchmark's topics, so no run starts.
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") +
                                     "security:\n  approvalTimeout: 60\nroutes:\n  - topic: alarms/#\n    agent: main\n");
  writeText(home + "/providers/replies.yaml",
            "replies:\n  - match: \"\"\n    turns:\n      - tool_calls: [{name: send, arguments: {to: owner, text: hi}}]\n"
            "      - text: done\n");
  writeText(home + "/agents/main/agent.yaml", "description: m\ntools: [read, send]\n");
  writeText(home + "/agents/asker/agent.yaml", "description: a\ntools: [read, send]\napprove: [\"send:owner\"]\n");
  Pined pined(home, {}, {});

  auto status = pined.api("GET", "/v1/status").json();
  pid_t brokerLaunch = 0;
  for (auto& p : status["processes"])
    if (p.value("role", "") == "broker") brokerLaunch = p["pid"].get<pid_t>();
  if (!brokerLaunch) throw std::runtime_error("GET /v1/status named no broker: " + status.dump());
  // The status names pine-launch, the broker's sandbox monitor; the broker's CPU is its own.
  pid_t broker = pine::bench::findProgram(brokerLaunch, "pine-broker");

  double floorCpu = 0, floor = rawSqliteRate(dir.path(), total, batch, &floorCpu);

  // ---- publish -> store -> delivered ---------------------------------------------------
  if (!onlySingles) {
    SseCounter sse(home, "/v1/events/stream?topic=bench/%23");
    double brokerCpu0 = processCpu(broker), supervisorCpu0 = processCpu(pined.pid());
    auto t0 = Clock::now();
    std::vector<std::thread> pubs;
    std::atomic<int> failures{0};
    for (int c = 0; c < clients; ++c)
      pubs.emplace_back([&, c] {
        Conn cl(home);
        for (int i = c * batch; i < total; i += batch * clients) {
          nlohmann::json events = nlohmann::json::array();
          for (int k = i; k < std::min(total, i + batch); ++k)
            events.push_back({{"topic", "bench/t" + std::to_string(k % 8)}, {"payload", {{"n", k}}}});
          if (cl.request("POST", "/v1/events", nlohmann::json{{"events", events}}.dump()) != 200) ++failures;
        }
      });
    for (auto& p : pubs) p.join();
    auto acked = Clock::now();
    while (sse.count < total && !sse.overflowed && secs(acked, Clock::now()) < 30)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto delivered = Clock::time_point(Clock::duration(sse.lastNs.load()));
    double brokerCpu = processCpu(broker) - brokerCpu0, supervisorCpu = processCpu(pined.pid()) - supervisorCpu0;
    double ackRate = (total - failures * batch) / secs(t0, acked), rate = sse.count / secs(t0, delivered);
    printf("events: %d in batches of %d over %d connections; %ld delivered to an SSE listener, %d failed posts%s\n",
           total, batch, clients, sse.count.load(), failures.load(), sse.overflowed ? ", THE LISTENER OVERFLOWED" : "");
    printf("  floor: raw SQLite inserts, batches of %d      %8.0f events/s   1\n", batch, floor);
    printf("  pine: HTTP publish -> store (acknowledged)   %8.0f events/s   %.3f\n", ackRate, ackRate / floor);
    printf("  pine: HTTP publish -> store -> delivered     %8.0f events/s   %.3f   (target >= 20000/s)\n", rate,
           rate / floor);
    // CPU per event does not depend on what else the machine runs, unlike the rates above.
    printf("  CPU per event: floor %.1f us (the inserting thread); pine-broker %.1f us (%.2fx), pined %.1f us\n",
           floorCpu / total * 1e6, brokerCpu / total * 1e6, brokerCpu / floorCpu, supervisorCpu / total * 1e6);
    fflush(stdout);
  }

  // ---- single events from many senders ---------------------------------------------------
  // A webhook or a device sends one event per request and waits for the answer: the broker must
  // group concurrent requests into one transaction to keep up (each acknowledged once committed).
  {
    const int senders = 16, singles = std::max(senders, total / 2);
    SseCounter sse1(home, "/v1/events/stream?topic=single/%23");
    if (onlySingles)
      printf("floor: raw SQLite inserts, batches of %d   %8.0f events/s; %.1f us of CPU an event\n", batch, floor,
             floorCpu / total * 1e6);
    auto body = [](int k) {
      return "{\"topic\":\"single/t" + std::to_string(k % 8) + "\",\"payload\":{\"n\":" + std::to_string(k) + "}}";
    };
    // The client alone: the same senders against a server that answers at once.
    double trivialRate = 0;
    {
      TrivialServer trivial(dir.path() + "/trivial.sock");
      auto t0 = Clock::now();
      auto r = sendEach(dir.path() + "/trivial.sock", "x", "/v1/events", senders, singles, body);
      trivialRate = (double)r.ok / secs(t0, Clock::now());
      if (r.failed) throw std::runtime_error("the trivial server failed " + std::to_string(r.failed) + " requests");
    }
    // The store alone at the size of group these senders allow (one event each in flight, so at most
    // 16 a commit): what SQLite itself gives at that size, against the same floor.
    double groupCpu = 0, groupFloor = rawSqliteRate(dir.path(), singles, senders, &groupCpu, "raw-groups.db");
    double b0 = processCpu(broker), self0 = processCpu(getpid());
    auto s0 = Clock::now();
    SendResult sent = sendEach(home + "/pine.sock", pine::bench::homeToken(home), "/v1/events", senders, singles, body);
    auto sAcked = Clock::now();
    long bad = sent.failed;
    while (sse1.count < singles - bad && !sse1.overflowed && secs(sAcked, Clock::now()) < 30)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    double bCpu = processCpu(broker) - b0, selfCpu = processCpu(getpid()) - self0;
    double singleRate = (singles - bad) / secs(s0, sAcked);
    printf("single events: %d over %d connections, one event a request, each waiting for its answer; "
           "%ld delivered, %ld failed%s\n",
           singles, senders, sse1.count.load(), bad, sse1.overflowed ? ", THE LISTENER OVERFLOWED" : "");
    printf("  raw SQLite inserts, commits of %d (the most these senders can have in one)   %8.0f events/s   %.3f\n",
           senders, groupFloor, groupFloor / floor);
    printf("  pine: HTTP publish -> store (acknowledged)   %8.0f events/s   %.3f   (target >= 0.4)\n", singleRate,
           singleRate / floor);
    printf("  the client alone, against a server that answers at once   %8.0f events/s   %.3f\n", trivialRate,
           trivialRate / floor);
    printf("  CPU per event: pine-broker %.1f us; this client (the senders' thread and the listener) %.1f us\n",
           bCpu / singles * 1e6, selfCpu / singles * 1e6);
    fflush(stdout);
  }

  if (onlySingles) return 0;
  // ---- approval overhead -----------------------------------------------------------------
  // Both agents run the same script (one `send`, then an answer); only `asker` has send on its approve
  // list. Runs alternate, after one warm-up of each; both are watched the same way (the streamed answer).
  runOnce(home, "main");
  runOnce(home, "asker");
  std::vector<double> with, without, paired, decided;
  int withAsked = 0, withoutAsked = 0;
  for (int i = 0; i < runs; ++i) {
    Run a = runOnce(home, "main"), b = runOnce(home, "asker");
    without.push_back(a.ms);
    with.push_back(b.ms);
    paired.push_back(b.ms - a.ms);
    decided.push_back(b.askedToDecidedMs);
    withoutAsked += a.approvals;
    withAsked += b.approvals;
  }
  if (withAsked != runs || withoutAsked != 0)
    throw std::runtime_error("expected one approval per asker run and none for main; got " + std::to_string(withAsked) +
                             " and " + std::to_string(withoutAsked) + " (check agents/*/agent.yaml approve:)");
  double mw = median(with), mo = median(without);
  printf("approval: %d runs each, alternating (one message, one `send`, an answer), streamed, approved when asked\n",
         runs);
  printf("  floor: run without an approval   median %7.1f ms   p90 %7.1f ms   1\n", mo, percentile(without, 0.9));
  printf("  pine: run with an approval       median %7.1f ms   p90 %7.1f ms   %.3f\n", mw, percentile(with, 0.9),
         mw / mo);
  printf("  overhead %.2f ms as the difference of medians, %.2f ms as the median of paired differences "
         "(target <= 5 ms)\n", mw - mo, median(paired));
  printf("    paired differences: p25 %.2f ms, p75 %.2f ms (the noise the median has to beat)\n",
         percentile(paired, 0.25), percentile(paired, 0.75));
  printf("    of which question at the client -> decision at the client (the API round trip)   median %.2f ms\n",
         median(decided));
  return 0;
} catch (std::exception& e) {
  fprintf(stderr, "bench-events: %s\n", e.what());
  return 1;
}
