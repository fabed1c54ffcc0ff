// Worker-to-broker RPC round trip (Cap'n Proto over the inherited socketpair)
// against the floor: a raw one-byte ping-pong over a socketpair between two
// processes (blocking write/read), measured in the same run.
//
// Where the scheduler puts the two processes matters more than anything either
// does: on this VM a wake-up across CPUs costs about 12 us each way, and a
// blocking ping-pong (the floor) is usually kept on one CPU by the kernel's
// synchronous wake-ups while an event loop's peer is not. So each placement is
// measured for both, alike: as the kernel places them, both on one CPU, and
// one on each CPU.
#include <kj/async-io.h>
#include <sched.h>
#include <sys/epoll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "broker/worker_link.h"
#include "common/link_stream.h"
#include "common/rpc_link.h"

using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// -1: wherever the kernel likes.
static void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu < 0) {
    for (long i = 0, n = sysconf(_SC_NPROCESSORS_ONLN); i < n; ++i) CPU_SET(i, &set);
  } else {
    CPU_SET(cpu, &set);
  }
  sched_setaffinity(0, sizeof set, &set);
}

struct Placement {
  const char* name;
  int worker, broker;
};

static std::vector<double> rawPingPong(int rounds, Placement at) {
  int sv[2];
  socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
  pid_t pid = fork();
  if (pid == 0) {
    pinTo(at.broker);
    close(sv[0]);
    char c;
    while (read(sv[1], &c, 1) == 1)
      if (write(sv[1], &c, 1) != 1) break;
    _exit(0);
  }
  close(sv[1]);
  pinTo(at.worker);
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

// The same ping-pong with each side waiting in epoll_wait() before its read, as any event
// loop does: what an event loop costs by itself, without Cap'n Proto.
static std::vector<double> epollPingPong(int rounds, Placement at) {
  int sv[2];
  socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
  auto waitThenRead = [](int ep, int fd, char* c) {
    struct epoll_event ev;
    for (;;) {
      ssize_t n = read(fd, c, 1);
      if (n == 1 || n == 0) return n == 1;
      if (errno != EAGAIN || epoll_wait(ep, &ev, 1, -1) < 0) return false;
    }
  };
  auto watch = [](int fd) {
    int ep = epoll_create1(0);
    struct epoll_event ev = {};
    ev.events = EPOLLIN | EPOLLET;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    return ep;
  };
  pid_t pid = fork();
  if (pid == 0) {
    pinTo(at.broker);
    close(sv[0]);
    int ep = watch(sv[1]);
    char c;
    while (waitThenRead(ep, sv[1], &c))
      if (write(sv[1], &c, 1) != 1) break;
    _exit(0);
  }
  close(sv[1]);
  pinTo(at.worker);
  int ep = watch(sv[0]);
  std::vector<double> us;
  char c = 'x';
  for (int i = 0; i < rounds; ++i) {
    auto t0 = Clock::now();
    if (write(sv[0], &c, 1) != 1 || !waitThenRead(ep, sv[0], &c)) break;
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  close(sv[0]);
  close(ep);
  waitpid(pid, nullptr, 0);
  return us;
}

// kjStream: the same link over kj's own socket stream (what pine used before LinkStream).
static std::vector<double> capnpPing(int rounds, Placement at, bool kjStream) {
  int sv[2];
  socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
  pid_t pid = fork();
  if (pid == 0) {  // the broker side, serving a worker's Broker capability, as broker.cpp does
    pinTo(at.broker);
    close(sv[0]);
    auto io = kj::setupAsyncIo();
    auto paf = kj::newPromiseAndFulfiller<pine::WorkerOutcome>();
    auto broker = kj::heap<pine::WorkerBroker>(pine::TaskForWorker{"t", "a", "x", "none"}, kj::mv(paf.fulfiller));
    kj::Own<pine::RpcLink> link =
        kjStream ? kj::heap<pine::RpcLink>(pine::wrapSocket(*io.lowLevelProvider, sv[1]),
                                           capnp::rpc::twoparty::Side::SERVER, kj::mv(broker), pine::LinkLimits{0, 512 * 1024})
                 : kj::heap<pine::RpcLink>(pine::wrapLinkSocket(io.unixEventPort, sv[1]),
                                           capnp::rpc::twoparty::Side::SERVER, kj::mv(broker), 512 * 1024);
    link->onDisconnect().catch_([](kj::Exception&&) {}).wait(io.waitScope);
    _exit(0);
  }
  close(sv[1]);
  pinTo(at.worker);
  std::vector<double> us;
  {
    auto io = kj::setupAsyncIo();  // the worker side, as worker/main.cpp does
    kj::Own<pine::RpcLink> link =
        kjStream ? kj::heap<pine::RpcLink>(pine::wrapSocket(*io.lowLevelProvider, sv[0]),
                                           capnp::rpc::twoparty::Side::CLIENT, nullptr, pine::LinkLimits{0, 1 << 20})
                 : kj::heap<pine::RpcLink>(
                       pine::wrapLinkSocket(io.unixEventPort, sv[0]),
                       capnp::rpc::twoparty::Side::CLIENT, nullptr, 1 << 20);
    auto broker = link->peer().castAs<pine::proto::Broker>();
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
  std::vector<Placement> placements = {{"as placed by the kernel", -1, -1}, {"both on one CPU", 0, 0}};
  if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) placements.push_back({"one on each CPU", 0, 1});
  printf("rpc: %d round trips x 3 interleaved passes per placement, medians in us\n", rounds);
  printf("  %-26s %8s %8s %8s %14s %14s\n", "placement", "floor", "capnp", "ratio", "kj stream", "epoll floor");
  for (auto at : placements) {
    // Interleave the variants so that machine noise hits them alike.
    std::vector<double> raw, rpc, old, loop;
    for (int pass = 0; pass < 3; ++pass) {
      auto r = rawPingPong(rounds, at);
      auto c = capnpPing(rounds, at, false);
      auto k = capnpPing(rounds, at, true);
      auto e = epollPingPong(rounds, at);
      raw.insert(raw.end(), r.begin(), r.end());
      rpc.insert(rpc.end(), c.begin(), c.end());
      old.insert(old.end(), k.begin(), k.end());
      loop.insert(loop.end(), e.begin(), e.end());
    }
    double floor = median(raw), cap = median(rpc), kj = median(old), ep = median(loop);
    printf("  %-26s %8.2f %8.2f %7.2fx %8.2f %4.2fx %8.2f %4.2fx\n", at.name, floor, cap, cap / floor, kj, kj / floor,
           ep, ep / floor);
  }
  pinTo(-1);
  printf("  ratios: over the floor in the same placement (target for capnp: at most 1.30x)\n");
  return 0;
}
