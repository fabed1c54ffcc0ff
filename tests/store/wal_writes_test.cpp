// The store's VFS (broker/store/wal_writes.h): a commit reaches the WAL as one write, and is in
// the file when appendEvents returns (another connection, which does not go through the VFS,
// reads it at once), for small commits, commits past the 64 KiB it gathers at most, and across
// the checkpoints that restart the WAL. What survives a SIGKILL is durability_test's.
#include "broker/store/wal_writes.h"
#include "tests/store/helpers.h"

using namespace pine::store;
using namespace storetest;
using pine::store::detail::walWriteCalls;

namespace {

std::vector<Event> batchOf(int first, int n, size_t payloadBytes = 0) {
  std::vector<Event> b;
  for (int i = first; i < first + n; ++i) {
    // Eight topics, as bench-events sends: a commit changes several pages of the topic index.
    b.push_back(ev("e" + std::to_string(i), "bench/t" + std::to_string(i % 8), 1000 + i));
    if (payloadBytes) b.back().payload = "\"" + std::string(payloadBytes, 'x') + "\"";
  }
  return b;
}

long long countIn(Raw& raw) { return std::stoll(raw.text("SELECT count(*) FROM events")); }

}  // namespace

TEST_CASE("wal writes: each commit is one write of the WAL, readable by another connection when it returns") {
  TempDir dir;
  auto s = Store::open(dir.db());
  Raw raw(dir.db());
  long long before = countIn(raw);
  for (int round = 0; round < 30; ++round) {
    auto b = batchOf(round * 16, 16);
    auto calls = walWriteCalls();
    s->appendEvents(b);
    // Sixteen events on eight topics touch several pages: without the VFS, two writes a page.
    CHECK(walWriteCalls() - calls == 1);
    CHECK(countIn(raw) == before + (round + 1) * 16);
  }
  auto last = s->event("e479");
  REQUIRE(last);
  CHECK(last->topic == "bench/t7");
}

TEST_CASE("wal writes: a commit past 64 KiB is written in parts, all of it there when it returns") {
  TempDir dir;
  auto s = Store::open(dir.db());
  Raw raw(dir.db());
  long long before = countIn(raw);
  auto big = batchOf(0, 40, 64 * 1024);  // 2.5 MiB of payloads
  auto calls = walWriteCalls();
  s->appendEvents(big);
  CHECK(walWriteCalls() - calls >= 40);  // at most 64 KiB a write
  CHECK(countIn(raw) == before + 40);
  CHECK(raw.text("SELECT length(payload) FROM events WHERE id = 'e39'") == std::to_string(64 * 1024 + 2));
  // And the store goes on with small commits, one write each.
  auto small = batchOf(100, 5);
  calls = walWriteCalls();
  s->appendEvents(small);
  CHECK(walWriteCalls() - calls == 1);
  CHECK(countIn(raw) == before + 45);
}

TEST_CASE("wal writes: the WAL restarts after checkpoints and every commit is still read back") {
  TempDir dir;
  auto s = Store::open(dir.db());
  {
    Raw raw(dir.db());
    long long before = countIn(raw);
    // About 4,000 pages of commits: SQLite checkpoints every 1,000 and then writes the WAL from its start.
    for (int round = 0; round < 400; ++round) {
      auto b = batchOf(round * 16, 16, 512);
      s->appendEvents(b);
    }
    CHECK(countIn(raw) == before + 400 * 16);
  }
  s.reset();
  auto again = Store::open(dir.db());
  auto e = again->event("e6399");
  REQUIRE(e);
  CHECK(e->payload == "\"" + std::string(512, 'x') + "\"");
}
