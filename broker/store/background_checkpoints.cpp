#include "broker/store/background_checkpoints.h"

#include <algorithm>

#include "broker/store/sqlite_db.h"

namespace pine::store::detail {

BackgroundCheckpoints::BackgroundCheckpoints(Db& writer, CheckpointLimits limits)
    : writer_(writer), limits_(limits), own_(std::make_unique<Db>(writer.path())) {
  // The thread's connection syncs at its checkpoints as the writer's would (synchronous=NORMAL).
  own_->exec("PRAGMA synchronous = NORMAL", "setting synchronous for checkpoints");
  thread_ = std::thread([this] { run(); });
  sqlite3_wal_hook(writer_.handle(), &BackgroundCheckpoints::walHook, this);
}

BackgroundCheckpoints::~BackgroundCheckpoints() {
  sqlite3_wal_hook(writer_.handle(), nullptr, nullptr);
  {
    std::lock_guard<std::mutex> lock(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

int BackgroundCheckpoints::walHook(void* self, sqlite3* db, const char* name, int frames) {
  static_cast<BackgroundCheckpoints*>(self)->onCommit(db, name, frames);
  return SQLITE_OK;
}

void BackgroundCheckpoints::onCommit(sqlite3* db, const char* name, int frames) {
  std::unique_lock<std::mutex> lock(m_);
  if (frames < copiedUpTo_ || frames < askedAt_) copiedUpTo_ = askedAt_ = 0;  // the WAL restarted
  if (busy_ || paused_ > 0) return;
  if (frames >= limits_.restartPages &&
      (frames - copiedUpTo_ < limits_.pages || frames >= 2 * (long long)limits_.restartPages)) {
    // The thread is idle and copied all but the last few commits: copy those here, so that every
    // frame is home and the next commit starts the WAL again. A passive checkpoint: it waits for
    // nobody; the thread waits for it. More than a few left: the thread's turn first (below),
    // unless it cannot keep up and the WAL is twice as long as it should be.
    busy_ = true;
    lock.unlock();
    int copied = 0;
    int rc = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, &copied);
    ++writerRuns_;
    lock.lock();
    busy_ = false;
    if (rc == SQLITE_OK) copiedUpTo_ = copied;
    lock.unlock();
    cv_.notify_all();
    return;
  }
  // Each `pages` new frames, also while a reader's old snapshot keeps a checkpoint from copying all.
  if (frames - std::max(copiedUpTo_, askedAt_) >= limits_.pages && !wanted_) {
    wanted_ = true;
    askedAt_ = frames;
    lock.unlock();
    cv_.notify_all();
  }
}

void BackgroundCheckpoints::run() {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || (wanted_ && paused_ == 0 && !busy_); });
    if (stopping_) return;
    wanted_ = false;
    busy_ = true;
    lock.unlock();
    int copied = 0;
    int rc = sqlite3_wal_checkpoint_v2(own_->handle(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, &copied);
    lock.lock();
    busy_ = false;
    if (rc == SQLITE_OK) copiedUpTo_ = copied;
    ++threadRuns_;
    cv_.notify_all();  // a Pause may be waiting for this one to end
  }
}

BackgroundCheckpoints::Pause::Pause(BackgroundCheckpoints& b) : b_(b) {
  std::unique_lock<std::mutex> lock(b_.m_);
  ++b_.paused_;
  b_.cv_.wait(lock, [this] { return !b_.busy_; });
}

BackgroundCheckpoints::Pause::~Pause() {
  {
    std::lock_guard<std::mutex> lock(b_.m_);
    --b_.paused_;
  }
  b_.cv_.notify_all();
}

}  // namespace pine::store::detail
