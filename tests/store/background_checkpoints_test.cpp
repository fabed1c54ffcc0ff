// Store::checkpointInBackground (broker/store/background_checkpoints.h): the thread copies the
// WAL home while commits go on, the WAL still restarts under a steady load, a checkpoint that
// cannot finish holds up no commit, a rewrite still leaves a secret in neither file, and a
// commit with the thread running is as durable as before (durability_test kills one).
#include <chrono>
#include <cstdint>
#include <thread>

#include "tests/store/helpers.h"

using namespace pine::store;
using namespace storetest;

namespace {

// 16 events on 8 topics, as bench-events sends them: about 18 pages of WAL a commit.
void commitGroups(Store& s, int first, int groups) {
  for (int g = first; g < first + groups; ++g) {
    std::vector<Event> b;
    for (int i = 0; i < 16; ++i)
      b.push_back(ev("g" + std::to_string(g) + "-" + std::to_string(i), "bench/t" + std::to_string(i % 8), 1000 + g));
    s.appendEvents(b);
  }
}

// The WAL header's checkpoint sequence number: SQLite adds one each time the WAL restarts.
uint32_t walRestarts(const std::string& db) {
  std::string h = fileBytes(db + "-wal");
  REQUIRE(h.size() >= 16);
  auto b = [&](int i) { return uint32_t((unsigned char)h[i]); };
  return (b(12) << 24) | (b(13) << 16) | (b(14) << 8) | b(15);
}

long long fileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? (long long)st.st_size : -1;
}

bool waitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace

TEST_CASE("background checkpoints: the thread copies the WAL into the database file, not the commits") {
  TempDir dir;
  auto s = Store::open(dir.db());
  commitGroups(*s, 0, 1);
  // Asks for a checkpoint each 50 frames, and never lets a commit restart the WAL itself.
  s->checkpointInBackground({50, 1 << 30});
  long long dbBefore = fileSize(dir.db());
  commitGroups(*s, 1, 40);  // about 700 frames: fewer than SQLite's own threshold (1,000)
  REQUIRE(waitFor([&] { return s->backgroundCheckpoints() > 0 && fileSize(dir.db()) > dbBefore + 50 * 4096; }));
  CHECK(s->restartCheckpoints() == 0);
  CHECK(allEvents(*s).size() == 41 * 16);
}

TEST_CASE("background checkpoints: without them, those commits leave the database file as it was") {
  // The twin of the test above: its growth is the thread's doing, not SQLite's automatic checkpoint.
  TempDir dir;
  auto s = Store::open(dir.db());
  commitGroups(*s, 0, 1);
  long long dbBefore = fileSize(dir.db());
  commitGroups(*s, 1, 40);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(fileSize(dir.db()) == dbBefore);
  CHECK(s->backgroundCheckpoints() == 0);
}

TEST_CASE("background checkpoints: under a steady load the WAL still starts again from its beginning") {
  TempDir dir;
  auto s = Store::open(dir.db());
  s->checkpointInBackground({50, 200});
  commitGroups(*s, 0, 1);
  uint32_t before = walRestarts(dir.db());
  commitGroups(*s, 1, 300);  // about 5,400 frames without a pause: the thread seldom catches up alone
  // Restarts, whoever copied the last pages: in a fast build the commits' own checkpoints
  // (without them this fails), in a slow one (the sanitizers) the thread may now and then
  // finish first, so how many were the commits' is not a thing to count on.
  CHECK(walRestarts(dir.db()) >= before + 3);
  // Restarting, the WAL stays far below the 22 MB those frames would fill.
  CHECK(fileSize(dir.db() + "-wal") < 8 * 1024 * 1024);
  CHECK(allEvents(*s).size() == 301 * 16);
}

TEST_CASE("background checkpoints: a checkpoint that cannot finish holds up no commit") {
  TempDir dir;
  auto s = Store::open(dir.db());
  s->checkpointInBackground({500, 2000});
  commitGroups(*s, 0, 1);
  uint32_t before = 0;
  {
    // A reader keeps an old snapshot: no checkpoint may copy past it, so the WAL cannot restart
    // (after the next commit, which may restart a WAL that was all copied when the reader began).
    Raw reader(dir.db());
    reader.exec("BEGIN");
    REQUIRE(reader.text("SELECT count(*) FROM events") == "16");
    commitGroups(*s, 1, 1);
    before = walRestarts(dir.db());
    auto runs = s->backgroundCheckpoints();
    commitGroups(*s, 2, 99);
    CHECK(allEvents(*s).size() == 101 * 16);
    CHECK(walRestarts(dir.db()) == before);
    // Asked each 500 new frames (about 1,800 in all), not after each of the 99 commits.
    CHECK(s->backgroundCheckpoints() - runs <= 1800 / 500 + 2);
    CHECK(reader.text("SELECT count(*) FROM events") == "16");
    reader.exec("COMMIT");
  }
  // Once it is gone, the next commits copy what waited and start the WAL again.
  REQUIRE(waitFor([&] {
    commitGroups(*s, int(allEvents(*s).size() / 16), 1);
    return walRestarts(dir.db()) > before;
  }));
}

TEST_CASE("background checkpoints: a rewrite still leaves a secret in neither file") {
  TempDir dir;
  const std::string secret = "sk-live-0a1b2c3d4e5f";
  auto s = Store::open(dir.db());
  // A checkpoint after every commit: the rewrite's own checkpoint (TRUNCATE) meets the thread's
  // as often as it can, and must wait for it rather than give up.
  s->checkpointInBackground({1, 1 << 30});
  for (int round = 0; round < 5; ++round) {
    std::vector<Event> b = {ev("s" + std::to_string(round))};
    b[0].payload = R"({"text":"key )" + secret + R"("})";
    s->appendEvents(b);
    commitGroups(*s, round * 10, 10);
    CHECK(s->rewriteText([&](const std::string& t) {
      std::string out = t;
      for (size_t p; (p = out.find(secret)) != std::string::npos;) out.replace(p, secret.size(), "[redacted]");
      return out;
    }) == 1);
    CHECK(fileBytes(dir.db()).find(secret) == std::string::npos);
    CHECK(fileBytes(dir.db() + "-wal").find(secret) == std::string::npos);
  }
  CHECK(s->backgroundCheckpoints() > 0);
}

TEST_CASE("background checkpoints: closing the store with the thread at work loses nothing") {
  TempDir dir;
  {
    auto s = Store::open(dir.db());
    s->checkpointInBackground({1, 1 << 30});
    commitGroups(*s, 0, 50);
  }  // closed at once, whatever the thread was doing
  auto s = Store::open(dir.db());
  CHECK(allEvents(*s).size() == 50 * 16);
  CHECK(fileSize(dir.db() + "-wal") <= 0);  // the last connection to close checkpointed and removed it
}

TEST_CASE("background checkpoints: limits that make no sense are refused with what to pass") {
  TempDir dir;
  auto s = Store::open(dir.db());
  CHECK(errorOf([&] { s->checkpointInBackground({0, 10}); }).find("pages must be at least 1") != std::string::npos);
  CHECK(errorOf([&] { s->checkpointInBackground({100, 10}); }).find("restartPages at least pages") != std::string::npos);
  s->checkpointInBackground({100, 100});  // the legitimate twin
  commitGroups(*s, 0, 1);
  CHECK(allEvents(*s).size() == 16);
}
