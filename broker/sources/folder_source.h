// One `folder` source: new, changed and removed regular files of a folder (and its sub-folders
// with `recursive: true`) as events, each once its file has settled (no change for debounceMs),
// with name (relative to the folder), size and SHA-256. What was reported is remembered (name ->
// size, mtime, sha256 in the store's source_state, written once its event is committed), so a
// restart reports what changed while pine was down, once, and nothing else. Links, devices and
// pipes are skipped, never followed or read (folder_files.h). Lives on the event-loop thread.
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
  size_t maxPending = 10000;
  uint64_t maxHashBytes = uint64_t{1} << 30;  // larger files are reported without sha256
  size_t bytesPerTurn = size_t{8} << 20;      // hashing yields to the event loop after this much
  int maxDepth = 32;                          // sub-folders deeper than this are not looked into
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

 private:
  struct Seen {
    uint64_t size = 0;
    int64_t mtimeNs = 0;
    std::string sha256;  // "-" when the file was too large to hash
  };
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

  kj::Promise<void> listen();
  void onNotices(const std::vector<FolderNotice>& notices);
  void lookAll();
  void look(const std::string& dir, int depth, std::set<std::string>* seen);
  void touch(const std::string& name);
  void wake();
  kj::Promise<void> loop();
  long long nextDelayMs(long long now) const;
  void settle(long long now);
  void hashSome();
  void finishHash(Hashing& h);
  void report(const std::string& name, const char* change, const Seen* seen);
  void rememberQuietly(const std::string& name, const Seen& seen);

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
  std::deque<std::string> toHash_;            // settled, waiting to be hashed
  std::set<std::string> queuedHash_;
  std::unique_ptr<Hashing> hashing_;
  uint64_t dropped_ = 0;
  bool lookAgain_ = false;
  bool working_ = false;
  kj::Promise<void> listening_ = nullptr;
  kj::Promise<void> work_ = nullptr;
};

}  // namespace pine::sources
