// Checkpoints of the WAL (copying committed pages into the database file, then syncing it) run
// on a thread of their own with a connection of their own, so that a commit never waits for
// one. SQLite's automatic checkpoint runs inside the commit that crosses its threshold: every
// 1,000 pages the broker's loop stopped for the copy and two fsyncs (bench-events: about a
// seventh of single events' intake). A checkpoint moves data already committed to the WAL, so
// what a commit acknowledged stays as durable as before.
//
// The writer's WAL hook (called after each of its commits with the WAL's length) asks the thread
// for a passive checkpoint each `pages` new frames; a passive checkpoint never takes the write
// lock, so commits go on meanwhile. The WAL starts again from its beginning only after a
// checkpoint copied every frame, which a checkpoint running beside a steady stream of commits
// never does: once the WAL holds `restartPages` and the thread, idle, left fewer than `pages`
// frames to copy (the commits made while it copied), the hook copies those itself and the next
// commit restarts the WAL; at twice `restartPages` (a thread that cannot keep up) it copies
// whatever is left. Failures are left to the next checkpoint, as SQLite's own automatic
// one does.
#pragma once
#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "broker/store/store.h"

namespace pine::store::detail {

class Db;

class BackgroundCheckpoints {
 public:
  // Opens its own connection to writer's database and replaces the writer's automatic checkpoints.
  BackgroundCheckpoints(Db& writer, CheckpointLimits limits);
  // Stops the thread (a checkpoint under way finishes first) and unhooks the writer.
  ~BackgroundCheckpoints();
  BackgroundCheckpoints(const BackgroundCheckpoints&) = delete;
  BackgroundCheckpoints& operator=(const BackgroundCheckpoints&) = delete;

  // While a Pause lives the thread starts no checkpoint, and one under way has finished: for the
  // writer's own checkpoints that must not meet another (a TRUNCATE after a rewrite).
  class Pause {
   public:
    explicit Pause(BackgroundCheckpoints& b);
    ~Pause();
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    BackgroundCheckpoints& b_;
  };

  // How many checkpoints the thread ran, and the writer ran to restart the WAL (for the tests).
  unsigned long long threadRuns() const { return threadRuns_; }
  unsigned long long writerRuns() const { return writerRuns_; }

 private:
  static int walHook(void* self, sqlite3* db, const char* name, int frames);
  void onCommit(sqlite3* db, const char* name, int frames);
  void run();

  Db& writer_;
  const CheckpointLimits limits_;
  std::unique_ptr<Db> own_;  // used by the thread only
  std::mutex m_;
  std::condition_variable cv_;
  // Under m_. busy_: a checkpoint (the thread's or the writer's) is under way.
  bool wanted_ = false, busy_ = false, stopping_ = false;
  int paused_ = 0;
  int copiedUpTo_ = 0;  // the WAL frame the last checkpoint reached (0 after a restart)
  int askedAt_ = 0;     // the WAL's length when the thread was last asked (0 after a restart)
  std::atomic<unsigned long long> threadRuns_{0}, writerRuns_{0};
  std::thread thread_;  // last: started once everything above is ready
};

}  // namespace pine::store::detail
