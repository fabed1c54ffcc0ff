// Worker-to-broker RPC round trip (Cap'n Proto over the inherited socketpair)
// against the floor: a raw one-byte ping-pong over a socketpair between the
// same two processes, measured in the same run.
#include <kj/async-io.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "broker/worker_link.h"
#include "common/rpc_link.h"

using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static std::vector<double> rawPingPong(int rounds) {
  int sv[2];
  socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    char c;
    while (read(sv[1], &c, 1) == 1)
      if (write(sv[1], &c, 1) != 1) break;
    _exit(0);
  }
  close(sv[1]);
  std::vector<double> us;
  char c = 'x';
  for (int i = 0; i < rounds; ++i) {
    auto t0 = Clock::now();
    if (write(sv[0], &c, 1) != 1 || read(sv[0], &c, 1) != 1) break;
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  close(sv[0]);
  waitpid(pid, nullptr, 0);
  return us;
}

static std::vector<double> capnpPing(int rounds) {
  int sv[2];
  socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
  pid_t pid = fork();
  if (pid == 0) {  // the broker side, serving a worker's Broker capability
    close(sv[0]);
    auto io = kj::setupAsyncIo();
    auto paf = kj::newPromiseAndFulfiller<pine::WorkerOutcome>();
    pine::RpcLink link(pine::wrapSocket(*io.lowLevelProvider, sv[1]), capnp::rpc::twoparty::Side::SERVER,
                       kj::heap<pine::WorkerBroker>(pine::TaskForWorker{"t", "a", "x", "none"}, kj::mv(paf.fulfiller)),
                       pine::LinkLimits{0, 512 * 1024});
    link.onDisconnect().catch_([](kj::Exception&&) {}).wait(io.waitScope);
    _exit(0);
  }
  close(sv[1]);
  std::vector<double> us;
  {
    auto io = kj::setupAsyncIo();
    pine::RpcLink link(pine::wrapSocket(*io.lowLevelProvider, sv[0]), capnp::rpc::twoparty::Side::CLIENT, nullptr,
                       pine::LinkLimits{0, 1 << 20});
    auto broker = link.peer().castAs<pine::proto::Broker>();
    broker.pingRequest().send().wait(io.waitScope);  // bootstrap resolved before timing
    for (int i = 0; i < rounds; ++i) {
      auto t0 = Clock::now();
      broker.pingRequest().send().wait(io.waitScope);
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
  }
  waitpid(pid, nullptr, 0);
  return us;
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 20000;
  signal(SIGPIPE, SIG_IGN);
  // Interleave the two so that machine noise hits both alike; keep the medians of each pass.
  std::vector<double> raw, rpc;
  for (int pass = 0; pass < 3; ++pass) {
    auto r = rawPingPong(rounds);
    auto c = capnpPing(rounds);
    raw.insert(raw.end(), r.begin(), r.end());
    rpc.insert(rpc.end(), c.begin(), c.end());
  }
  double floor = median(raw), cap = median(rpc);
  printf("rpc: %d round trips x 3 passes\n", rounds);
  printf("  floor  raw socketpair ping-pong   median %8.2f us\n", floor);
  printf("  capnp  worker -> broker ping      median %8.2f us\n", cap);
  printf("  ratio  %.2fx the floor (target: at most 1.30x)\n", cap / floor);
  return 0;
}
