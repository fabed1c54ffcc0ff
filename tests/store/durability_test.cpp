// What appendEvents acknowledged survives a SIGKILL of the process in the middle of a load.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "tests/store/helpers.h"

using namespace pine::store;
using namespace storetest;

namespace {

// The child: batches of 100 events, and after each commit the last seq down the pipe. It
// never stops by itself; the parent kills it.
[[noreturn]] void loadUntilKilled(const std::string& path, int ackFd, bool background) {
  try {
    auto s = Store::open(path);
    // As the broker's store: checkpoints on their own thread, often, so the kill may land in one.
    if (background) s->checkpointInBackground({50, 400});
    for (long long b = 0;; ++b) {
      std::vector<Event> batch;
      for (int i = 0; i < 100; ++i) {
        auto e = ev("e" + std::to_string(b) + "-" + std::to_string(i), "load/t", b);
        e.payload = "{\"pad\":\"" + std::string(200, 'x') + "\"}";
        batch.push_back(std::move(e));
      }
      s->appendEvents(batch);
      long long seq = batch.back().seq;
      if (::write(ackFd, &seq, sizeof seq) != ssize_t(sizeof seq)) _exit(3);
    }
  } catch (...) {
    _exit(2);
  }
}

void killMidLoad(bool background) {
  TempDir dir;
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    loadUntilKilled(dir.db(), fds[1], background);
  }
  ::close(fds[1]);
  std::vector<long long> acked;
  long long seq = 0;
  // Kill it mid-load: after 40 acknowledged batches it is inside the next one.
  while (acked.size() < 40 && ::read(fds[0], &seq, sizeof seq) == ssize_t(sizeof seq)) acked.push_back(seq);
  REQUIRE(acked.size() == 40);
  REQUIRE(::kill(pid, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  // Acks written before the kill are still in the pipe: they count too.
  while (::read(fds[0], &seq, sizeof seq) == ssize_t(sizeof seq)) acked.push_back(seq);
  ::close(fds[0]);

  auto s = Store::open(dir.db());
  auto all = allEvents(*s);
  std::set<long long> stored;
  for (auto& e : all) stored.insert(e.seq);
  for (long long a : acked) {
    INFO("acknowledged seq " << a);
    CHECK(stored.count(a) == 1);
  }
  // Whole batches only: the one in flight at the kill is all there or not at all.
  CHECK(all.size() % 100 == 0);
  CHECK(all.size() >= acked.size() * 100);
  CHECK(all.back().seq == (long long)all.size());
}

}  // namespace

TEST_CASE("durability: every seq acknowledged before SIGKILL is there after reopening") { killMidLoad(false); }

TEST_CASE("durability: the same with the WAL checkpointed on a thread of its own, as the broker does") {
  killMidLoad(true);
}
