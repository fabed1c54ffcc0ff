// One `folder` source: new, changed and removed regular files of a folder (and its sub-folders
// with `recursive: true`) as events, each once its file has settled (no change for debounceMs),
// with name (relative to the folder), size and SHA-256. What was reported is remembered (name ->
// size, mtime, sha256 in the store's source_state, written once its event is committed), so a
// restart reports what changed while pine was down, once, and nothing else. Links, devices and
// pipes are skipped, never followed or read (folder_files.h). Lives on the event-loop thread,
// and does a few files a turn (FolderOptions::filesPerTurn): a folder of many files holds
// nothing else up.
#pragma once
#include <kj/async-io.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "broker/sources/draft.h"
#include "broker/sources/folder_files.h"
#include "broker/sources/folder_notify.h"
#include "broker/sources/source_memory.h"
#include "config/model.h"

namespace pine::sources {

struct FolderOptions {
  // Files waiting to settle or to be hashed. A change beyond it is counted as dropped, and the
  // whole folder is looked at again once the queue has drained, so it is reported late, not lost.
  // A look at the folder waits while the queue is full rather than dropping.
  size_t maxPending = 10000;
  uint64_t maxHashBytes = uint64_t{1} << 30;  // larger files are reported without sha256
  size_t bytesPerTurn = size_t{8} << 20;      // hashing yields to the event loop after this much
  // Files looked at, settled, hashed or noticed in one turn of the event loop (each is a few
  // system calls), so that a folder of many small files does not hold the broker's other work.
  size_t filesPerTurn = 256;
  // Files a source keeps track of (about 200 bytes of the broker's memory each). A new file past
  // it is not reported, and the source's status says so, until reported files are removed.
  size_t maxFiles = 100000;
  int maxDepth = 32;  // sub-folders deeper than this are not looked into
  // How often the folder is checked (still the one at its path?) and, once gone, looked for again.
  long long rootCheckMs = 5000;
};

class FolderSource {
 public:
  FolderSource(kj::AsyncIoContext& io, const config::Source& source, std::shared_ptr<SourceMemory> memory, Sink sink,
               FolderOptions options);
  ~FolderSource();
  FolderSource(const FolderSource&) = delete;
  FolderSource& operator=(const FolderSource&) = delete;

  // Opens the folder and takes a first look (files that changed while nobody watched). Error
  // text saying why it cannot run, or nullopt.
  std::optional<std::string> start();
  const config::Source& source() const { return source_; }
  uint64_t dropped() const { return dropped_; }
  // The most file-system calls (a file's facts, a file or folder opened, a name read from a
  // folder) one turn of the loop made: a few for each of its filesPerTurn.
  size_t largestTurn() const { return largestTurn_; }

  // What was reported of a file (and is remembered in the store).
  struct Seen {
    uint64_t size = 0;
    int64_t mtimeNs = 0;
    int64_t ctimeNs = 0;     // 0 when remembered before it was kept: hashed again once
    std::string sha256;      // "-" when the file was too large to hash
    uint64_t lookedAt = 0;   // the number of the last look that saw it (or it was reported)
  };

 private:
  struct Pending {
    FileFacts facts;  // as last looked at
    long long dueMs = 0;
  };
  struct Hashing {
    std::string name;
    Fd fd;
    FileFacts facts;
    Sha256 sha;
    uint64_t done = 0;
  };
  // One folder being looked at, a few entries a turn.
  struct Look {
    std::string dir;  // relative, "" the top
    int depth = 0;
    uint64_t number = 0;
    std::unique_ptr<DirReader> reader;  // once begun
  };
  // Reported files below `prefix` (directly in it only, with directOnly) that no look numbered
  // `before` or later has seen are touched, a few a turn: gone, or to be looked at again.
  struct Sweep {
    std::string prefix;
    bool directOnly = false;
    uint64_t before = 0;
    std::string from;    // where it goes on
    bool whole = false;  // a whole look's: it ends that look
  };

  kj::Promise<void> listen();
  void onNotices(std::vector<FolderNotice> notices);
  void notice(const FolderNotice& n);
  void lookAll();
  void lookAt(const std::string& dir, int depth);
  // Works through the folders to look at within `budget` files; false once the queue is full.
  void lookSome(size_t& budget);
  void sweepSome(size_t& budget);
  void touch(const std::string& name);
  FileFacts statBeneath(const std::string& rel);  // counted in calls_
  void dropChange(const char* what);  // the queue is full: counted, found by a later look
  void setDue(std::map<std::string, Pending>::iterator it, long long dueMs);
  void wake();
  kj::Promise<void> loop();
  long long nextDelayMs(long long now) const;
  bool room() const { return pending_.size() + toHash_.size() < options_.maxPending; }
  void settle(long long now, size_t& budget);
  void hashSome(size_t& budget);
  void finishHash(Hashing& h);
  void report(const std::string& name, const char* change, const Seen* seen);
  void rememberQuietly(const std::string& name, const Seen& seen);
  bool overCap();
  void unseen(const std::string& what);
  void noteOnce(const std::string& why);  // a status error and a log line, once each
  // Whether the folder opened at start is still the one at the configured path (not moved away,
  // deleted or replaced).
  bool rootStillHere();
  // It is not: nothing more is read through it, and what was reported is reported removed.
  void rootGone();
  // Every rootCheckMs: whether the folder is still there, or once gone, whether one is again.
  kj::Promise<void> keepRoot();
  void lookForRoot();

  kj::AsyncIoContext& io_;
  config::Source source_;
  std::shared_ptr<SourceMemory> memory_;
  Sink sink_;
  FolderOptions options_;
  Fd root_;
  kj::Own<FolderNotify> notify_;
  std::set<std::string> watched_;             // folders with a watch, relative ("" the top)
  std::map<std::string, Seen> known_;         // what was reported, by name
  std::map<std::string, Pending> pending_;    // waiting to settle
  std::set<std::pair<long long, std::string>> due_;  // pending_ by when each is due
  std::deque<std::string> toHash_;            // settled, waiting to be hashed
  std::set<std::string> queuedHash_;
  std::unique_ptr<Hashing> hashing_;
  std::deque<FolderNotice> notices_;          // heard, not yet looked at
  std::deque<Look> looks_;                    // folders to look at; the first is under way
  std::set<std::string> lookQueued_;          // in looks_, not yet begun
  std::deque<Sweep> sweeps_;
  uint64_t lookCount_ = 0;                // numbers the looks (Seen::lookedAt)
  uint64_t wholeFrom_ = 0;                    // a look at the whole folder: its first number, 0 when none
  bool wholeSwept_ = false;                   // its sweep is queued
  uint64_t dropped_ = 0;
  size_t largestTurn_ = 0;
  size_t calls_ = 0;  // this turn's (largestTurn)
  bool lookAgain_ = false;  // the whole folder again once the queue has drained
  bool overCap_ = false;    // a new file went unreported (maxFiles): look again once files go
  std::set<std::string> unseenNoted_;  // kinds of folders not looked into, said once each (unseen)
  bool working_ = false;
  kj::Promise<void> listening_ = nullptr;
  kj::Promise<void> work_ = nullptr;
  kj::Promise<void> keepingRoot_ = nullptr;
  std::string rootWhy_;                    // why it could not be opened again, last time
};

}  // namespace pine::sources
