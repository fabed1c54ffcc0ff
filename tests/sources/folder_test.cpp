// Folder sources against real folders in a temp dir and a real store: new, changed and removed
// files once each after they settle, what was reported kept across a restart, recursion, links
// never followed (not to /etc/passwd, not to a .env), .env never read, a flood bounded.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <fstream>
#include <nlohmann/json.hpp>

#include "broker/sources/folder_source.h"
#include "broker/sources/source_manager.h"
#include "broker/store/store.h"
#include "tests/sources/mosquitto_fixture.h"
#include "tests/sources/permissions_apply.h"

using namespace sources_test;
using namespace std::chrono_literals;
using pine::sources::Draft;
using pine::sources::FolderOptions;
using pine::sources::FolderSource;
using pine::sources::SourceManager;

namespace {

// sha256 of "hello\n"
const char* kHelloSha = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

struct Dir {
  std::string path;
  Dir() {
    char tmpl[] = "/tmp/pine-folder-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
    std::filesystem::create_directories(path + "/watched");
  }
  ~Dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string watched() const { return path + "/watched"; }
};

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A store, a loop, and what was committed: the sink commits each draft to the real store, then
// calls its `committed`, as the broker's event bus does.
struct Rig {
  Dir dir;
  std::unique_ptr<pine::store::Store> store = pine::store::Store::open(dir.path + "/pine.db");
  std::shared_ptr<pine::sources::SourceMemory> memory = pine::sources::storeMemory(*store);
  Loop loop;
  std::vector<nlohmann::json> events;  // payloads, with "topic" and "trust" added
  int committedCount = 0;
  // Events reported in one turn of the loop: a marker queued behind the turn's first event runs
  // before the loop's next turn (timers fire only once the queue is empty) and ends the count.
  size_t inTurn = 0, mostInTurn = 0;
  bool marked = false;
  pine::sources::Sink sink() {
    return [this](Draft d) {
      if (!marked) {
        marked = true;
        kj::evalLater([this]() {
          marked = false;
          inTurn = 0;
        }).detach([](kj::Exception&&) {});
      }
      mostInTurn = std::max(mostInTurn, ++inTurn);
      std::vector<pine::store::Event> batch(1);
      batch[0].id = "e" + std::to_string(++committedCount);
      batch[0].topic = d.topic;
      batch[0].source = d.source;
      batch[0].trust = d.trust;
      batch[0].payload = d.payload;
      batch[0].origin = "source:" + d.source;
      batch[0].timeMs = 1;
      store->appendEvents(batch);
      auto j = nlohmann::json::parse(d.payload);
      j["topic"] = d.topic;
      j["trust"] = d.trust;
      events.push_back(j);
      if (d.committed) d.committed();
    };
  }
  pine::config::Source source(bool recursive = false, int debounceMs = 150) {
    pine::config::Source s;
    s.name = "drop";
    s.type = "folder";
    s.path = dir.watched();
    s.recursive = recursive;
    s.debounceMs = debounceMs;
    return s;
  }
  std::unique_ptr<FolderSource> start(const pine::config::Source& s, FolderOptions o = {}) {
    auto f = std::make_unique<FolderSource>(loop.io, s, memory, sink(), o);
    auto why = f->start();
    REQUIRE_MESSAGE(!why, *why);
    return f;
  }
  size_t named(const std::string& name, const std::string& change = "") const {
    size_t n = 0;
    for (auto& e : events) n += e["name"] == name && (change.empty() || e["change"] == change);
    return n;
  }
  bool waitFor(const std::string& name, const std::string& change) {
    return loop.until([&] { return named(name, change) > 0; }, 5s);
  }
};

}  // namespace

TEST_CASE("folder: a new file is one event with its name, size and sha256, after it settles") {
  Rig rig;
  auto src = rig.start(rig.source());
  write(rig.dir.watched() + "/a.txt", "hello\n");
  REQUIRE(rig.waitFor("a.txt", "new"));
  rig.loop.run(500ms);  // nothing more comes
  REQUIRE(rig.events.size() == 1);
  auto& e = rig.events[0];
  CHECK(e["size"] == 6);
  CHECK(e["sha256"] == kHelloSha);
  CHECK(e["topic"] == "folder/drop/new");
  CHECK(e["trust"] == "untrusted");
  // Remembered in the store once committed: name -> size, mtime, sha256.
  auto kept = rig.store->sourceState("drop", "a.txt");
  REQUIRE(kept);
  CHECK(kept->find(kHelloSha) != std::string::npos);
}

TEST_CASE("folder: a file written in pieces is reported once, after the last piece settled") {
  Rig rig;
  auto src = rig.start(rig.source(false, 800));  // gaps of 100 ms: far below it, even on a busy machine
  std::string path = rig.dir.watched() + "/big.log";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  for (int i = 0; i < 6; ++i) {
    REQUIRE(::write(fd, "piece\n", 6) == 6);
    rig.loop.run(100ms);  // each gap shorter than the debounce
  }
  close(fd);
  CHECK(rig.events.empty());  // still being written a moment ago
  REQUIRE(rig.waitFor("big.log", "new"));
  rig.loop.run(700ms);
  REQUIRE(rig.events.size() == 1);
  CHECK(rig.events[0]["size"] == 36);
}

TEST_CASE("folder: a changed file is one 'changed' event; a touch without new content is none; removal is one") {
  Rig rig;
  write(rig.dir.watched() + "/a.txt", "hello\n");
  auto src = rig.start(rig.source());
  REQUIRE(rig.waitFor("a.txt", "new"));
  write(rig.dir.watched() + "/a.txt", "hello, world\n");
  REQUIRE(rig.waitFor("a.txt", "changed"));
  rig.loop.run(400ms);
  CHECK(rig.named("a.txt", "changed") == 1);
  CHECK(rig.events.back()["size"] == 13);
  // Same bytes, new mtime: nothing new to say.
  size_t before = rig.events.size();
  struct timespec later[2] = {{0, UTIME_NOW}, {time(nullptr) + 100, 0}};
  REQUIRE(utimensat(AT_FDCWD, (rig.dir.watched() + "/a.txt").c_str(), later, 0) == 0);
  rig.loop.run(600ms);
  CHECK(rig.events.size() == before);
  std::filesystem::remove(rig.dir.watched() + "/a.txt");
  REQUIRE(rig.waitFor("a.txt", "removed"));
  CHECK(rig.events.back()["topic"] == "folder/drop/removed");
  CHECK(!rig.store->sourceState("drop", "a.txt"));
}

TEST_CASE("folder: after a restart, unchanged files are not reported again; what changed while down is, once") {
  Rig rig;
  write(rig.dir.watched() + "/same.txt", "hello\n");
  write(rig.dir.watched() + "/edited.txt", "v1\n");
  write(rig.dir.watched() + "/gone.txt", "bye\n");
  {
    auto src = rig.start(rig.source());
    REQUIRE(rig.loop.until([&] { return rig.events.size() == 3; }, 5s));
  }
  rig.events.clear();
  // While nobody watches.
  write(rig.dir.watched() + "/edited.txt", "v2, longer\n");
  write(rig.dir.watched() + "/added.txt", "new\n");
  std::filesystem::remove(rig.dir.watched() + "/gone.txt");
  auto src = rig.start(rig.source());
  REQUIRE(rig.loop.until([&] { return rig.events.size() >= 3; }, 5s));
  rig.loop.run(500ms);
  CHECK(rig.events.size() == 3);
  CHECK(rig.named("edited.txt", "changed") == 1);
  CHECK(rig.named("added.txt", "new") == 1);
  CHECK(rig.named("gone.txt", "removed") == 1);
  CHECK(rig.named("same.txt") == 0);
  // And a third start finds nothing at all.
  src.reset();
  rig.events.clear();
  src = rig.start(rig.source());
  rig.loop.run(600ms);
  CHECK(rig.events.empty());
}

TEST_CASE("folder: sub-folders only with recursive, including ones made after the start") {
  Rig rig;
  std::filesystem::create_directories(rig.dir.watched() + "/sub/deeper");
  write(rig.dir.watched() + "/sub/deeper/x.txt", "x\n");
  write(rig.dir.watched() + "/top.txt", "top\n");
  SUBCASE("not recursive") {
    auto src = rig.start(rig.source(false));
    REQUIRE(rig.waitFor("top.txt", "new"));
    std::filesystem::create_directories(rig.dir.watched() + "/later");
    write(rig.dir.watched() + "/later/y.txt", "y\n");
    write(rig.dir.watched() + "/sub/z.txt", "z\n");
    rig.loop.run(700ms);
    CHECK(rig.events.size() == 1);
  }
  SUBCASE("recursive") {
    auto src = rig.start(rig.source(true));
    REQUIRE(rig.waitFor("sub/deeper/x.txt", "new"));
    REQUIRE(rig.waitFor("top.txt", "new"));
    std::filesystem::create_directories(rig.dir.watched() + "/later/on");
    write(rig.dir.watched() + "/later/on/y.txt", "y\n");
    REQUIRE(rig.waitFor("later/on/y.txt", "new"));
    write(rig.dir.watched() + "/sub/z.txt", "z\n");
    REQUIRE(rig.waitFor("sub/z.txt", "new"));
    // A folder removed with its files: each reported file is removed.
    std::filesystem::remove_all(rig.dir.watched() + "/later");
    REQUIRE(rig.waitFor("later/on/y.txt", "removed"));
  }
}

TEST_CASE("folder: links are never followed, .env never read: nothing of /etc/passwd or a .env reaches an event") {
  Rig rig;
  // A stand-in for pine's .env outside the folder, and links to it and to /etc/passwd inside.
  write(rig.dir.path + "/.env", "PINE_SECRET=never-in-an-event-1234\n");
  write(rig.dir.path + "/outside.txt", "outside\n");
  std::filesystem::create_directories(rig.dir.path + "/outside-dir");
  write(rig.dir.path + "/outside-dir/inner.txt", "inner\n");
  std::string w = rig.dir.watched();
  std::filesystem::create_symlink("/etc/passwd", w + "/passwd");
  std::filesystem::create_symlink(rig.dir.path + "/.env", w + "/env-link");
  std::filesystem::create_symlink(rig.dir.path + "/outside-dir", w + "/dir-link");
  write(w + "/.env", "LOCAL_SECRET=also-never-read\n");
  write(w + "/.ENV.local", "X=1\n");
  write(w + "/ok.txt", "hello\n");
  auto src = rig.start(rig.source(true));
  REQUIRE(rig.waitFor("ok.txt", "new"));
  // Made while watched: a link to the outside file, and a file replaced by a link.
  std::filesystem::create_symlink(rig.dir.path + "/outside.txt", w + "/late-link");
  std::filesystem::remove(w + "/ok.txt");
  std::filesystem::create_symlink("/etc/passwd", w + "/ok.txt");
  rig.loop.run(800ms);
  for (auto& e : rig.events) {
    std::string name = e["name"];
    CHECK_MESSAGE((name == "ok.txt"), e.dump());
    CHECK(e.dump().find("never") == std::string::npos);
  }
  CHECK(rig.named("ok.txt", "removed") == 1);  // a file that became a link is gone as a file
  // Nothing remembered but the folder itself.
  auto kept = rig.store->sourceStates("drop");
  CHECK(kept.size() == 1);
  CHECK(kept.count("/folder") == 1);
}

TEST_CASE("folder: a hard link to a file outside is not read; the same file copied in is") {
  Rig rig;
  write(rig.dir.path + "/.env", "PINE_SECRET=never-in-an-event-5678\n");
  std::string w = rig.dir.watched();
  auto src = rig.start(rig.source());
  // Another name for pine's .env inside the folder: the sandbox grants the folder, and a hash of
  // a short secret gives it away.
  REQUIRE(link((rig.dir.path + "/.env").c_str(), (w + "/notes.txt").c_str()) == 0);
  write(w + "/ok.txt", "hello\n");
  REQUIRE(rig.waitFor("ok.txt", "new"));
  rig.loop.run(500ms);
  CHECK(rig.named("notes.txt") == 0);
  // The twin: the same bytes as a file of its own are reported.
  std::filesystem::remove(w + "/notes.txt");
  std::filesystem::copy_file(rig.dir.path + "/.env", w + "/notes.txt");
  REQUIRE(rig.waitFor("notes.txt", "new"));
  // And a reported file that gains a second name is gone as a file that can be read.
  REQUIRE(link((w + "/ok.txt").c_str(), (rig.dir.path + "/ok-elsewhere").c_str()) == 0);
  {
    std::ofstream more(w + "/ok.txt", std::ios::app);
    more << "more\n";
  }
  REQUIRE(rig.waitFor("ok.txt", "removed"));
  CHECK(rig.named("ok.txt", "changed") == 0);
}

TEST_CASE("folder: a flood is bounded by the queue; what did not fit is counted and reported later, once") {
  Rig rig;
  FolderOptions o;
  o.maxPending = 40;
  auto src = rig.start(rig.source(false, 100), o);
  for (int i = 0; i < 300; ++i) write(rig.dir.watched() + "/f" + std::to_string(i), std::to_string(i));
  REQUIRE(rig.loop.until([&] { return rig.events.size() >= 300; }, 20s));
  rig.loop.run(500ms);
  CHECK(rig.events.size() == 300);
  std::set<std::string> names;
  for (auto& e : rig.events) names.insert(e["name"].get<std::string>());
  CHECK(names.size() == 300);
  CHECK(src->dropped() > 0);
  auto status = rig.store->sourceStatus("drop");
  REQUIRE(status);
  CHECK(status->error.find("too many changed files") != std::string::npos);
}

TEST_CASE("folder: the manager starts it while wanted, stops it, and says why one cannot run") {
  Rig rig;
  pine::sources::Options o;
  o.memory = rig.memory;
  SourceManager manager(rig.loop.io, rig.sink(), noConnectors(), o);
  auto s = rig.source();
  auto missing = s;
  missing.name = "missing";
  missing.path = rig.dir.path + "/nope";
  manager.update({s, missing});
  CHECK(manager.running() == std::vector<std::string>{"drop"});
  CHECK(manager.notRunning()["missing"].find("No such file or directory") != std::string::npos);
  write(rig.dir.watched() + "/a.txt", "hello\n");
  REQUIRE(rig.waitFor("a.txt", "new"));
  CHECK(manager.publish("drop", "x/y", "{}").wait(rig.loop.io.waitScope)->find("only receives") != std::string::npos);
  manager.update({});  // nobody wants it: stopped, and nothing more is heard
  CHECK(manager.running().empty());
  write(rig.dir.watched() + "/b.txt", "hello\n");
  rig.loop.run(500ms);
  CHECK(rig.named("b.txt") == 0);
  // Without a store to remember in, a folder source does not run.
  SourceManager bare(rig.loop.io, rig.sink(), noConnectors());
  bare.update({s});
  CHECK(bare.notRunning()["drop"].find("store") != std::string::npos);
}

TEST_CASE("folder: many files are taken a few a turn, and a look at them waits for room rather than dropping") {
  Rig rig;
  const std::string w = rig.dir.watched();
  for (int i = 0; i < 3000; ++i) write(w + "/f" + std::to_string(i), std::to_string(i));
  FolderOptions o;
  o.maxPending = 500;
  o.filesPerTurn = 64;
  auto src = rig.start(rig.source(false, 50), o);
  REQUIRE(rig.loop.until([&] { return rig.events.size() >= 3000; }, 60s));
  rig.loop.run(300ms);
  CHECK(rig.events.size() == 3000);
  CAPTURE(rig.mostInTurn);
  CHECK(rig.mostInTurn <= 64);  // hashed and reported 64 at most a turn, not all 3,000 at once
  CHECK(src->largestTurn() <= 4 * 64);  // a few file-system calls for each
  // The look that found them paused while 500 waited, so nothing was dropped or looked at twice.
  CHECK(src->dropped() == 0);
  auto status = rig.store->sourceStatus("drop");
  CHECK((!status || status->error.empty()));

  // A restart with all of them known: stat'ed a few a turn too, nothing reported.
  src.reset();
  rig.events.clear();
  auto again = rig.start(rig.source(false, 50), o);
  write(w + "/late", "late");
  REQUIRE(rig.waitFor("late", "new"));
  rig.loop.run(300ms);
  CHECK(rig.events.size() == 1);
  CHECK(again->largestTurn() <= 4 * 64);
}

TEST_CASE("folder: past maxFiles new files go unreported, with the reason, until reported files are removed") {
  Rig rig;
  const std::string w = rig.dir.watched();
  FolderOptions o;
  o.maxFiles = 20;
  auto src = rig.start(rig.source(false, 50), o);
  for (int i = 0; i < 30; ++i) write(w + "/f" + std::to_string(100 + i), std::to_string(i));
  REQUIRE(rig.loop.until([&] { return rig.events.size() >= 20; }, 10s));
  rig.loop.run(500ms);
  CHECK(rig.events.size() == 20);  // the legitimate twenty, and not one more
  auto status = rig.store->sourceStatus("drop");
  REQUIRE(status);
  CHECK(status->error.find("more than 20 files") != std::string::npos);
  CHECK(status->error.find("f1") == std::string::npos);  // no file's name: outside content
  // Five reported files removed: five removals, then five of those waiting are reported.
  std::vector<std::string> gone;
  for (auto& e : rig.events)
    if (gone.size() < 5) gone.push_back(e["name"].get<std::string>());
  for (auto& name : gone) std::filesystem::remove(w + "/" + name);
  REQUIRE(rig.loop.until([&] { return rig.events.size() >= 30; }, 10s));
  rig.loop.run(500ms);
  size_t removed = 0, added = 0;
  std::set<std::string> names;
  for (auto& e : rig.events) {
    removed += e["change"] == "removed";
    added += e["change"] == "new";
    if (e["change"] == "new") names.insert(e["name"].get<std::string>());
  }
  CHECK(removed == 5);
  CHECK(added == 25);
  CHECK(names.size() == 25);
}

TEST_CASE("folder: a file or sub-folder the broker may not read is said in the status line, and reported once readable") {
  // Before, both were left out without a word (a review's /etc: shadow and gshadow missing).
  Rig rig;
  const std::string w = rig.dir.watched();
  write(w + "/ok.txt", "hello\n");
  write(w + "/private.txt", "mine\n");
  std::filesystem::create_directories(w + "/closed");
  write(w + "/closed/inside.txt", "x");
  chmod((w + "/private.txt").c_str(), 0);
  chmod((w + "/closed").c_str(), 0);
  PermissionsApply asTheBroker;
  auto src = rig.start(rig.source(true, 50));
  REQUIRE(rig.waitFor("ok.txt", "new"));  // the legitimate twin
  rig.loop.run(500ms);
  CHECK(rig.named("private.txt") == 0);
  CHECK(rig.named("closed/inside.txt") == 0);
  auto status = rig.store->sourceStatus("drop");
  REQUIRE(status);
  CAPTURE(status->error);
  CHECK(status->error.find("may not read") != std::string::npos);
  CHECK(status->error.find("private") == std::string::npos);  // no file's name: outside content
  // Made readable: reported then, once.
  chmod((w + "/private.txt").c_str(), 0644);
  CHECK(rig.waitFor("private.txt", "new"));
  rig.loop.run(300ms);
  CHECK(rig.named("private.txt") == 1);
  chmod((w + "/closed").c_str(), 0755);  // for the clean-up
}

TEST_CASE("folder: sub-folders deeper than maxDepth are not looked into, and the status line says so") {
  // Before, files there were left out without a word: the owner saw nothing and no reason.
  Rig rig;
  const std::string w = rig.dir.watched();
  std::filesystem::create_directories(w + "/a/b/c/secretname");
  write(w + "/a/b/c/shallow.txt", "3 deep");
  write(w + "/a/b/c/secretname/deep.txt", "4 deep");
  FolderOptions o;
  o.maxDepth = 3;
  auto src = rig.start(rig.source(true, 50), o);
  REQUIRE(rig.waitFor("a/b/c/shallow.txt", "new"));  // the legitimate twin, at the limit
  rig.loop.run(500ms);
  CHECK(rig.named("a/b/c/secretname/deep.txt") == 0);
  auto status = rig.store->sourceStatus("drop");
  REQUIRE(status);
  CHECK(status->error.find("more than 3 deep") != std::string::npos);
  CHECK(status->error.find("secretname") == std::string::npos);  // no folder's name: outside content
  // A folder made deeper while watched is told the same way, and nothing in it is reported.
  std::filesystem::create_directories(w + "/a/b/c/later");
  write(w + "/a/b/c/later/x.txt", "x");
  rig.loop.run(700ms);
  CHECK(rig.named("a/b/c/later/x.txt") == 0);
}

TEST_CASE("folder: a sub-folder of many files moved away, and a folder of many names that are not files, a few a turn") {
  Rig rig;
  const std::string w = rig.dir.watched();
  std::filesystem::create_directories(w + "/sub");
  std::filesystem::create_directories(w + "/names");
  for (int i = 0; i < 2000; ++i) write(w + "/sub/f" + std::to_string(i), std::to_string(i));
  for (int i = 0; i < 3000; ++i) std::filesystem::create_directory_symlink("/etc", w + "/names/l" + std::to_string(i));
  FolderOptions o;
  o.maxPending = 500;
  o.filesPerTurn = 64;
  auto src = rig.start(rig.source(true, 50), o);
  REQUIRE(rig.loop.until([&] { return rig.events.size() >= 2000; }, 60s));
  rig.loop.run(300ms);
  CHECK(rig.events.size() == 2000);  // the links are never reported
  CHECK(src->largestTurn() <= 4 * 64);  // 3,000 names read across turns, not in one

  // Moved out of the watched folder: 2,000 removals, touched a few a turn, none dropped.
  std::filesystem::rename(w + "/sub", rig.dir.path + "/moved");
  REQUIRE(rig.loop.until([&] { return rig.events.size() >= 4000; }, 60s));
  rig.loop.run(300ms);
  size_t removed = 0;
  std::set<std::string> names;
  for (auto& e : rig.events)
    if (e["change"] == "removed") {
      ++removed;
      names.insert(e["name"].get<std::string>());
    }
  CHECK(removed == 2000);
  CHECK(names.size() == 2000);
  CHECK(src->dropped() == 0);
  CHECK(src->largestTurn() <= 4 * 64);
  CHECK(rig.mostInTurn <= 64);
}

TEST_CASE("folder: a sub-folder replaced by another of the same name: the old files removed, the new one watched") {
  Rig rig;
  const std::string w = rig.dir.watched();
  std::filesystem::create_directories(w + "/a/sub");
  write(w + "/a/x", "x");
  write(w + "/a/sub/s", "s");
  auto src = rig.start(rig.source(true, 100));
  REQUIRE(rig.waitFor("a/x", "new"));
  REQUIRE(rig.waitFor("a/sub/s", "new"));
  std::filesystem::rename(w + "/a", rig.dir.path + "/old-a");
  std::filesystem::create_directories(w + "/a");
  write(w + "/a/y", "y");
  REQUIRE(rig.waitFor("a/y", "new"));
  REQUIRE(rig.waitFor("a/x", "removed"));
  REQUIRE(rig.waitFor("a/sub/s", "removed"));
  // The folder now at a/ is the one watched: a file written in it later is reported.
  write(w + "/a/z", "z");
  REQUIRE(rig.waitFor("a/z", "new"));
  // And the old folder, moved away, is not: nothing written there is reported.
  write(rig.dir.path + "/old-a/w", "w");
  rig.loop.run(500ms);
  CHECK(rig.named("a/w") == 0);
  CHECK(rig.named("a/x") == 2);
  CHECK(rig.named("a/y") == 1);
}

namespace {

// Rewrites `path` with `text` and puts its modification time back as it was: what a copy with
// -p, a restore, or someone hiding a change does. Only the ctime tells.
void rewriteKeepingMtime(const std::string& path, const std::string& text) {
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  write(path, text);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
  struct stat now {};
  REQUIRE(stat(path.c_str(), &now) == 0);
  REQUIRE(now.st_size == st.st_size);
  REQUIRE(now.st_mtim.tv_nsec == st.st_mtim.tv_nsec);
}

}  // namespace

TEST_CASE("folder: new content under the same size and mtime is a change, while watched and after a restart") {
  Rig rig;
  const std::string a = rig.dir.watched() + "/a.txt";
  write(a, "hello\n");
  auto src = rig.start(rig.source());
  REQUIRE(rig.waitFor("a.txt", "new"));
  rewriteKeepingMtime(a, "HELLO\n");
  REQUIRE(rig.waitFor("a.txt", "changed"));
  CHECK(rig.events.back()["sha256"] != kHelloSha);
  // While nobody watches: back to "hello\n", size and mtime as they were.
  src.reset();
  rewriteKeepingMtime(a, "hello\n");
  src = rig.start(rig.source());
  REQUIRE(rig.loop.until([&] { return rig.named("a.txt", "changed") == 2; }, 5s));
  CHECK(rig.events.back()["sha256"] == kHelloSha);
  // The legitimate twin: a chmod moves the ctime too, but the content is the same: no event.
  const size_t before = rig.events.size();
  REQUIRE(chmod(a.c_str(), 0640) == 0);
  rig.loop.run(600ms);
  src.reset();
  REQUIRE(chmod(a.c_str(), 0600) == 0);
  src = rig.start(rig.source());
  rig.loop.run(600ms);
  CHECK(rig.events.size() == before);
}

TEST_CASE("folder: pointed at another folder, a source starts afresh: its files new, none of the old one removed") {
  Rig rig;
  const std::string w = rig.dir.watched(), other = rig.dir.path + "/other";
  write(w + "/a.txt", "hello\n");
  write(w + "/b.txt", "b\n");
  {
    auto src = rig.start(rig.source());
    REQUIRE(rig.loop.until([&] { return rig.events.size() == 2; }, 5s));
  }
  // The same a.txt (a copy keeping its times) and a file of its own.
  std::filesystem::create_directories(other);
  std::filesystem::copy_file(w + "/a.txt", other + "/a.txt");
  struct stat st {};
  REQUIRE(stat((w + "/a.txt").c_str(), &st) == 0);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  REQUIRE(utimensat(AT_FDCWD, (other + "/a.txt").c_str(), times, 0) == 0);
  write(other + "/z.txt", "z\n");
  rig.events.clear();
  auto moved = rig.source();
  moved.path = other;
  auto src = rig.start(moved);
  REQUIRE(rig.loop.until([&] { return rig.events.size() >= 2; }, 5s));
  rig.loop.run(500ms);
  CHECK(rig.events.size() == 2);
  CHECK(rig.named("a.txt", "new") == 1);
  CHECK(rig.named("z.txt", "new") == 1);
  CHECK(rig.named("b.txt") == 0);  // still in the old folder: not removed
  // Started again on the same folder, its path written with a '/' at the end: nothing new to say
  // (the folder is remembered with its files).
  src.reset();
  rig.events.clear();
  moved.path += "/";
  src = rig.start(moved);
  rig.loop.run(600ms);
  CHECK(rig.events.empty());
}

TEST_CASE("folder: the folder itself moved away: its files removed, nothing from where it went, the new one watched") {
  for (bool recursive : {false, true}) {
    CAPTURE(recursive);
    Rig rig;
    const std::string w = rig.dir.watched(), moved = rig.dir.path + "/watched.old";
    std::filesystem::create_directories(w + "/sub");
    write(w + "/x", "x");
    write(w + "/sub/s", "s");
    FolderOptions o;
    o.rootCheckMs = 200;
    auto src = rig.start(rig.source(recursive, 100), o);
    REQUIRE(rig.waitFor("x", "new"));
    if (recursive) REQUIRE(rig.waitFor("sub/s", "new"));
    std::filesystem::rename(w, moved);
    // Before: the source went on through the folder where it went, reported no removal, and
    // reported what was written there (outside the configured path).
    REQUIRE(rig.waitFor("x", "removed"));
    if (recursive) REQUIRE(rig.waitFor("sub/s", "removed"));
    write(moved + "/outside", "o");
    write(moved + "/sub/outside", "o");
    std::filesystem::create_directories(w);
    write(w + "/after", "a");
    REQUIRE(rig.waitFor("after", "new"));
    write(w + "/later", "l");  // watched, not only looked at once
    REQUIRE(rig.waitFor("later", "new"));
    rig.loop.run(400ms);
    CHECK(rig.named("outside") == 0);
    CHECK(rig.named("sub/outside") == 0);
    CHECK(rig.named("x") == 2);
  }
}

TEST_CASE("folder: the folder deleted and made again; its twin, a folder that stays, reports as before") {
  Rig rig;
  const std::string w = rig.dir.watched();
  write(w + "/x", "x");
  FolderOptions o;
  o.rootCheckMs = 200;
  auto src = rig.start(rig.source(false, 100), o);
  REQUIRE(rig.waitFor("x", "new"));
  write(w + "/y", "y");  // the twin: the folder stays, a new file is one event
  REQUIRE(rig.waitFor("y", "new"));
  std::filesystem::remove_all(w);
  REQUIRE(rig.waitFor("x", "removed"));
  REQUIRE(rig.waitFor("y", "removed"));
  rig.loop.run(500ms);  // a few tries find nothing there
  std::filesystem::create_directories(w);
  write(w + "/x", "x");
  REQUIRE(rig.loop.until([&] { return rig.named("x", "new") == 2; }, 5s));
  CHECK(rig.named("y") == 2);
}
