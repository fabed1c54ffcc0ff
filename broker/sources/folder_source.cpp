#include "broker/sources/folder_source.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/log.h"

namespace pine::sources {
namespace {

// The memory's key for the folder the remembered files were seen in: no file's name (relative
// names never start with '/').
constexpr const char* kFolderKey = "/folder";

std::string joinRel(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

// source_state's value for a file: "size mtimeNs sha256 ctimeNs" (values kept before ctimeNs
// was have three fields: read with ctimeNs 0).
std::string encode(const FolderSource::Seen& s) {
  return std::to_string(s.size) + " " + std::to_string(s.mtimeNs) + " " + s.sha256 + " " + std::to_string(s.ctimeNs);
}

bool decode(const std::string& text, FolderSource::Seen& s) {
  std::istringstream in(text);
  if (!(in >> s.size >> s.mtimeNs >> s.sha256)) return false;
  if (!(in >> s.ctimeNs)) s.ctimeNs = 0;
  return true;
}

// Whether a file's facts are those it had when it was hashed, so its content is taken as the
// same without reading it. ctime too: size and mtime can be put back by whoever writes the file.
bool sameAsSeen(const FileFacts& f, const FolderSource::Seen& s) {
  return f.regular && f.size == s.size && f.mtimeNs == s.mtimeNs && f.ctimeNs == s.ctimeNs;
}

}  // namespace

FolderSource::FolderSource(kj::AsyncIoContext& io, const config::Source& source, std::shared_ptr<SourceMemory> memory,
                           Sink sink, FolderOptions options)
    : io_(io), source_(source), memory_(std::move(memory)), sink_(std::move(sink)), options_(options) {}

FolderSource::~FolderSource() = default;

std::optional<std::string> FolderSource::start() {
  // O_NOFOLLOW: the configured path is canonical (config checks it), so a link there now was put
  // in its place since; the broker's sandbox grants the folder, not where a link points.
  root_ = Fd(open(source_.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root_.ok()) {
    int e = errno;
    std::string hint = e == EACCES || e == EPERM
                           ? " (the broker's sandbox holds the folders configured when it started: `pinectl reload` "
                             "restarts it with this one; as root, the broker's own user must be able to read it)"
                           : e == ENOENT ? " (create it, or fix the path)" : "";
    return "source '" + source_.name + "': cannot open " + source_.path + ": " + strerror(e) + hint +
           "; it is not started";
  }
  std::string whyNot;
  notify_ = makeFolderNotify(io_.unixEventPort, whyNot);
  if (!notify_) return "source '" + source_.name + "': " + whyNot + "; it is not started";
  // What is remembered belongs to the folder it was seen in: pointed at another folder, the source
  // starts afresh (its files are new; the old folder's are not "removed", nothing was deleted).
  // Memory kept before the folder was noted is taken to be this folder's.
  auto remembered = memory_->recall(source_.name);
  // The same folder however its path ends ("/a/b/" is "/a/b").
  std::string path = source_.path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  auto folder = remembered.find(kFolderKey);
  const bool noted = folder != remembered.end() && folder->second == path;
  if (folder != remembered.end() && !noted) {
    spdlog::info("source '{}': its folder is now {} (was {}): what was reported there is forgotten", source_.name, path,
                 folder->second);
    memory_->forgetAll(source_.name);
    remembered.clear();
  }
  if (!noted) memory_->remember(source_.name, kFolderKey, path);
  for (auto& [name, value] : remembered) {
    Seen s;
    if (name != kFolderKey && decode(value, s)) known_[name] = s;
  }
  if (auto why = notify_->watch(source_.path, "")) return "source '" + source_.name + "': " + *why + "; it is not started";
  watched_.insert("");
  listening_ = listen().eagerlyEvaluate([name = source_.name](kj::Exception&& e) {
    spdlog::error("source '{}': stopped watching: {}", name, e.getDescription().cStr());
  });
  keepingRoot_ = keepRoot().eagerlyEvaluate([name = source_.name](kj::Exception&& e) {
    spdlog::error("source '{}': stopped checking its folder: {}", name, e.getDescription().cStr());
  });
  lookAll();
  return std::nullopt;
}

kj::Promise<void> FolderSource::listen() {
  return notify_->next().then([this](std::vector<FolderNotice> notices) {
    onNotices(std::move(notices));
    return listen();
  });
}

void FolderSource::onNotices(std::vector<FolderNotice> notices) {
  // Heard now, looked at a few a turn (loop). More than the queue holds: a look at the whole
  // folder finds the same changes for less.
  for (auto& n : notices) {
    if (n.overflow) {
      spdlog::warn("source '{}': the system dropped change notices; looking at the whole folder again", source_.name);
      notices_.clear();
      lookAll();
      continue;
    }
    if (notices_.size() >= options_.maxPending) {
      dropChange("change notices");
      continue;
    }
    notices_.push_back(std::move(n));
  }
  wake();
}

void FolderSource::notice(const FolderNotice& n) {
  if (!root_.ok()) return;  // the folder is gone; a look follows when it is back
  if (n.dir.empty() && n.name.empty() && !rootStillHere()) {  // the folder's own entry changed
    rootGone();
    return;
  }
  auto depthOf = [](const std::string& rel) { return rel.empty() ? 0 : (int)std::count(rel.begin(), rel.end(), '/') + 1; };
  if (n.name.empty()) {
    lookAt(n.dir, depthOf(n.dir));
    return;
  }
  std::string rel = joinRel(n.dir, n.name);
  FileFacts f = statBeneath(rel);
  const bool look = f.dir && source_.recursive && depthOf(rel) <= options_.maxDepth;
  if (f.dir && source_.recursive && !look) unseen("sub-folders more than " + std::to_string(options_.maxDepth) + " deep");
  if (watched_.count(rel)) {
    // A watched folder's own entry changed: moved away, deleted, replaced by another folder of
    // the same name, or only its mode. Its watches go (they may follow the folder elsewhere),
    // what was reported below it is looked at again, a few a turn, and a folder there now is
    // watched and looked at afresh.
    notify_->unwatch(rel);
    watched_.erase(rel);
    watched_.erase(watched_.lower_bound(rel + "/"), watched_.lower_bound(rel + "0"));  // '0' follows '/'
    sweeps_.push_back(Sweep{rel + "/", false, UINT64_MAX, "", false});
    if (look) lookAt(rel, depthOf(rel));
    return;
  }
  if (f.dir) {
    if (look) lookAt(rel, depthOf(rel));
    return;
  }
  touch(rel);
}

void FolderSource::lookAll() {
  if (wholeFrom_) {
    lookAgain_ = true;  // one is under way: another once it is done
    return;
  }
  wholeFrom_ = lookCount_ + 1;
  lookAt("", 0);
}

void FolderSource::lookAt(const std::string& dir, int depth) {
  if (!lookQueued_.insert(dir).second) return;  // waiting already (not yet begun)
  Look l;
  l.dir = dir;
  l.depth = depth;
  looks_.push_back(std::move(l));
  wake();
}

void FolderSource::lookSome(size_t& budget) {
  while (budget > 0 && !looks_.empty() && room()) {
    Look& l = looks_.front();  // a deque keeps it in place while sub-folders are added behind it
    if (!l.reader) {
      lookQueued_.erase(l.dir);
      l.number = ++lookCount_;
      --budget;
      ++calls_;
      if (l.dir.empty() && !rootStillHere()) {  // moved away while its notice was lost
        rootGone();
        return;
      }
      Fd d = openDirBeneath(root_.get(), l.dir);
      if (!d.ok()) {  // gone, or a link put in its place: the notice about it says so
        if (errno == EACCES || errno == EPERM) unseen("sub-folders the broker's user may not read");
        looks_.pop_front();
        continue;
      }
      // Watched again at every look: the folder at this name may be another one than the one
      // watched (replaced while notices were lost), and the same one costs nothing.
      std::string full = l.dir.empty() ? source_.path : source_.path + "/" + l.dir;
      if (auto why = notify_->watch(full, l.dir)) {
        spdlog::warn("source '{}': {}", source_.name, *why);
        memory_->noteError(source_.name, *why);
      } else {
        watched_.insert(l.dir);
      }
      l.reader = std::make_unique<DirReader>(std::move(d));
    }
    DirEntry e;
    bool more = true;
    while (budget > 0 && room() && (++calls_, more = l.reader->next(e))) {
      --budget;  // every name read costs, a file's stat or not
      std::string rel = joinRel(l.dir, e.name);
      if (e.dir) {
        if (!source_.recursive) continue;
        if (l.depth < options_.maxDepth) lookAt(rel, l.depth + 1);
        else unseen("sub-folders more than " + std::to_string(options_.maxDepth) + " deep");
        continue;
      }
      if (!e.regular || secretsFileName(e.name)) continue;  // links, pipes, devices, .env: never read
      auto k = known_.find(rel);
      if (k != known_.end()) {
        k->second.lookedAt = l.number;
        FileFacts f = statBeneath(rel);
        if (sameAsSeen(f, k->second)) continue;
      }
      touch(rel);
    }
    if (more) return;  // the rest next turn
    // Reported files directly in this folder that its look did not see (a whole look also
    // sweeps at its end, for folders it did not reach).
    sweeps_.push_back(Sweep{l.dir.empty() ? "" : l.dir + "/", true, l.number, "", false});
    looks_.pop_front();
  }
}

void FolderSource::sweepSome(size_t& budget) {
  // A whole look's end: what was reported and no look has seen since it began (removed while
  // nobody watched, or a lost notice).
  if (wholeFrom_ && looks_.empty() && !wholeSwept_) {
    sweeps_.push_back(Sweep{"", false, wholeFrom_, "", true});
    wholeSwept_ = true;
  }
  size_t passed = 0;  // known files looked past cost too, 64 to a file touched
  while (budget > 0 && room() && !sweeps_.empty()) {
    Sweep& w = sweeps_.front();
    auto it = known_.lower_bound(std::max(w.prefix, w.from));
    for (; it != known_.end() && it->first.rfind(w.prefix, 0) == 0 && budget > 0 && room(); ++it) {
      if (++passed % 64 == 0) --budget;
      if (w.directOnly && it->first.find('/', w.prefix.size()) != std::string::npos) continue;
      if (it->second.lookedAt >= w.before) continue;
      if (budget > 0) --budget;
      touch(it->first);
    }
    if (it != known_.end() && it->first.rfind(w.prefix, 0) == 0) {
      w.from = it->first;  // on from here next turn
      return;
    }
    if (w.whole) {
      wholeFrom_ = 0;
      wholeSwept_ = false;
    }
    sweeps_.pop_front();
  }
}

void FolderSource::touch(const std::string& name) {
  if (secretsFileName(name)) return;
  long long due = nowMs() + source_.debounceMs;
  auto it = pending_.find(name);
  if (it != pending_.end()) {
    setDue(it, due);  // still changing: it settles later
    wake();
    return;
  }
  if (!room()) {
    dropChange("changed files");
    return;
  }
  pending_.emplace(name, Pending{statBeneath(name), due});
  due_.insert({due, name});
  wake();
}

bool FolderSource::rootStillHere() {
  struct stat opened, here;
  calls_ += 2;
  return root_.ok() && fstat(root_.get(), &opened) == 0 && lstat(source_.path.c_str(), &here) == 0 &&
         S_ISDIR(here.st_mode) && here.st_dev == opened.st_dev && here.st_ino == opened.st_ino;
}

void FolderSource::rootGone() {
  std::string why = "its folder " + source_.path +
                    " was moved away or deleted: its files are reported removed, and the folder is looked for again";
  spdlog::warn("source '{}': {}", source_.name, why);
  memory_->noteError(source_.name, why);
  // Its watches and descriptor follow the folder where it went: what is written there now is
  // not this source's (it is outside the configured path).
  notify_->unwatch("");
  watched_.clear();
  root_ = Fd();
  notices_.clear();
  looks_.clear();
  lookQueued_.clear();
  wholeFrom_ = 0;
  wholeSwept_ = false;
  lookAgain_ = false;
  if (hashing_) {
    touch(hashing_->name);
    hashing_.reset();
  }
  // Every reported file, a few a turn: with no folder to find it in, each is reported removed.
  sweeps_.clear();
  sweeps_.push_back(Sweep{"", false, UINT64_MAX, "", false});
  rootWhy_.clear();
}

kj::Promise<void> FolderSource::keepRoot() {
  return io_.provider->getTimer().afterDelay(options_.rootCheckMs * kj::MILLISECONDS).then([this]() {
    if (root_.ok()) {
      // Deleted, it sends no notice while the source holds it open; moved, the notice may be lost.
      if (!rootStillHere()) rootGone();
    } else {
      lookForRoot();
    }
    return keepRoot();
  });
}

void FolderSource::lookForRoot() {
  Fd d(open(source_.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d.ok()) {
    int e = errno;
    // A folder there again that the sandbox does not grant: the broker's sandbox granted the
    // folder that went (Landlock holds it, not its path).
    std::string why = "its folder " + source_.path + " was moved away or deleted, and cannot be opened now: " +
                      strerror(e) +
                      (e == EACCES || e == EPERM ? " (the broker's sandbox holds the folder that went: `pinectl "
                                                   "reload` restarts it with the one there now)"
                                                 : "");
    if (why != rootWhy_) {
      spdlog::warn("source '{}': {}", source_.name, why);
      memory_->noteError(source_.name, why);
      rootWhy_ = why;
    }
    return;
  }
  root_ = std::move(d);
  spdlog::info("source '{}': its folder {} is there again: looking at it", source_.name, source_.path);
  if (auto why = notify_->watch(source_.path, "")) {
    spdlog::warn("source '{}': {}", source_.name, *why);
    memory_->noteError(source_.name, *why);
  } else {
    watched_.insert("");
  }
  lookAll();
}

void FolderSource::dropChange(const char* what) {
  if (dropped_++ % 1000 == 0)
    spdlog::warn("source '{}': more than {} {} wait; {} change(s) dropped so far, found again by a later look at "
                 "the folder",
                 source_.name, options_.maxPending, what, dropped_);
  if (!lookAgain_) memory_->noteError(source_.name, "too many changed files at once: some are reported late");
  lookAgain_ = true;
}

FileFacts FolderSource::statBeneath(const std::string& rel) {
  ++calls_;
  return factsBeneath(root_.get(), rel);
}

void FolderSource::setDue(std::map<std::string, Pending>::iterator it, long long dueMs) {
  due_.erase({it->second.dueMs, it->first});
  it->second.dueMs = dueMs;
  due_.insert({dueMs, it->first});
}

void FolderSource::wake() {
  if (working_) return;
  working_ = true;
  work_ = loop().eagerlyEvaluate([this](kj::Exception&& e) {
    working_ = false;
    spdlog::error("source '{}': {}", source_.name, e.getDescription().cStr());
  });
}

long long FolderSource::nextDelayMs(long long now) const {
  if (hashing_ || !toHash_.empty() || !notices_.empty()) return 0;
  if ((!looks_.empty() || !sweeps_.empty() || wholeFrom_) && room()) return 0;
  if (due_.empty()) return -1;
  return std::max(0LL, due_.begin()->first - now);
}

kj::Promise<void> FolderSource::loop() {
  long long delay = nextDelayMs(nowMs());
  if (lookAgain_ && !wholeFrom_ && looks_.empty() && room()) {
    // There is room again after a flood: find what was dropped (also while some file keeps
    // changing, which would keep the queue from ever draining).
    lookAgain_ = false;
    lookAll();
    delay = nextDelayMs(nowMs());
  }
  if (delay < 0) {
    working_ = false;
    return kj::READY_NOW;
  }
  // A zero delay still goes through the timer's turn, so notices and requests get their share.
  return io_.provider->getTimer().afterDelay(delay * kj::MILLISECONDS).then([this]() {
    size_t budget = options_.filesPerTurn;
    calls_ = 0;
    while (budget > 0 && !notices_.empty()) {
      FolderNotice n = std::move(notices_.front());
      notices_.pop_front();
      --budget;
      notice(n);
    }
    settle(nowMs(), budget);
    hashSome(budget);
    lookSome(budget);
    sweepSome(budget);
    largestTurn_ = std::max(largestTurn_, calls_);
    return loop();
  });
}

void FolderSource::settle(long long now, size_t& budget) {
  while (budget > 0 && !due_.empty() && due_.begin()->first <= now) {
    const std::string name = due_.begin()->second;
    auto it = pending_.find(name);
    --budget;
    FileFacts f = statBeneath(name);
    if (!(f == it->second.facts)) {  // changed since the last look: wait for quiet again
      it->second.facts = f;
      setDue(it, now + source_.debounceMs);
      continue;
    }
    due_.erase(due_.begin());
    pending_.erase(it);
    auto k = known_.find(name);
    if (!f.regular) {
      if (k != known_.end()) report(name, "removed", nullptr);
      continue;
    }
    if (k != known_.end() && sameAsSeen(f, k->second)) continue;
    if (k == known_.end() && overCap()) continue;
    if (queuedHash_.insert(name).second) toHash_.push_back(name);
  }
}

void FolderSource::hashSome(size_t& budget) {
  size_t bytes = options_.bytesPerTurn;
  std::vector<char> buf(64 * 1024);
  while (bytes > 0) {
    if (!hashing_) {
      if (toHash_.empty() || budget == 0) return;
      --budget;
      std::string name = toHash_.front();
      toHash_.pop_front();
      queuedHash_.erase(name);
      ++calls_;
      Fd fd = openFileBeneath(root_.get(), name);
      if (!fd.ok()) {
        if (errno == EACCES || errno == EPERM) {
          // Not remembered: once it may be read (a chmod is a notice too), it is reported then.
          noteOnce("files the broker's user may not read are not reported (make them readable to it)");
          continue;
        }
        touch(name);  // gone, or no longer a regular file: settle says which
        continue;
      }
      hashing_ = std::make_unique<Hashing>();
      hashing_->name = name;
      hashing_->facts = factsOf(fd.get());
      hashing_->fd = std::move(fd);
      if (hashing_->facts.size > options_.maxHashBytes) {
        finishHash(*hashing_);
        hashing_.reset();
        continue;
      }
    }
    ssize_t n = read(hashing_->fd.get(), buf.data(), std::min(buf.size(), bytes));
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) {
      hashing_->sha.update(buf.data(), (size_t)n);
      hashing_->done += (uint64_t)n;
      bytes -= (size_t)n;
      continue;
    }
    finishHash(*hashing_);
    hashing_.reset();
  }
}

void FolderSource::unseen(const std::string& what) {
  // Once a kind, without the folder's name (names are outside content): files there are not
  // reported, and the owner should know why rather than see nothing.
  noteOnce("files in " + what + " are not reported");
}

void FolderSource::noteOnce(const std::string& why) {
  if (!unseenNoted_.insert(why).second) return;
  spdlog::warn("source '{}': {}", source_.name, why);
  memory_->noteError(source_.name, why);
}

bool FolderSource::overCap() {
  if (known_.size() < options_.maxFiles) return false;
  if (!overCap_) {
    // Without the file's name: a status line repeats nothing a stranger chose (names are outside content).
    std::string why = "more than " + std::to_string(options_.maxFiles) +
                      " files: new ones are not reported until reported files are removed";
    spdlog::warn("source '{}': {}", source_.name, why);
    memory_->noteError(source_.name, why);
  }
  overCap_ = true;
  return true;
}

void FolderSource::finishHash(Hashing& h) {
  const bool tooLarge = h.facts.size > options_.maxHashBytes;
  FileFacts after = factsOf(h.fd.get());
  // Written to while being read, or cut short by an error: the hash would describe no version of
  // the file. It waits for quiet again.
  if (!(after == h.facts) || (!tooLarge && h.done != h.facts.size)) {
    touch(h.name);
    return;
  }
  Seen seen{h.facts.size, h.facts.mtimeNs, h.facts.ctimeNs, tooLarge ? std::string("-") : h.sha.hex(), lookCount_};
  auto k = known_.find(h.name);
  if (k == known_.end() && overCap()) return;
  // Touched, not changed: the same content; for a file too large to hash, the same size and mtime
  // (a chmod moves only its ctime).
  const bool same = k != known_.end() && (tooLarge ? k->second.size == seen.size && k->second.mtimeNs == seen.mtimeNs &&
                                                         k->second.sha256 == "-"
                                                   : k->second.sha256 == seen.sha256);
  if (same) {
    rememberQuietly(h.name, seen);
    return;
  }
  report(h.name, k == known_.end() ? "new" : "changed", &seen);
}

void FolderSource::rememberQuietly(const std::string& name, const Seen& seen) {
  known_[name] = seen;
  memory_->remember(source_.name, name, encode(seen));
}

void FolderSource::report(const std::string& name, const char* change, const Seen* seen) {
  std::optional<Seen> before;
  if (auto k = known_.find(name); k != known_.end()) before = k->second;
  nlohmann::json payload = {{"name", name}, {"change", change}};
  if (seen) {
    payload["size"] = seen->size;
    payload["mtimeMs"] = seen->mtimeNs / 1000000;
    if (seen->sha256 == "-") payload["sha256"] = nullptr;
    else payload["sha256"] = seen->sha256;
    known_[name] = *seen;
  } else {
    known_.erase(name);
    if (overCap_) {  // room again for a file that went unreported: a look finds it
      overCap_ = false;
      lookAgain_ = true;
    }
  }
  Draft d;
  d.source = source_.name;
  d.topic = "folder/" + source_.name + "/" + change;
  d.trust = source_.trust == config::Trust::Owner ? "owner" : "untrusted";
  // A name that is not UTF-8 is shown with U+FFFD; the remembered name keeps its bytes.
  d.payload = payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Remembered only once the event is committed: a crash in between reports the file again
  // rather than never.
  std::string value = seen ? encode(*seen) : "";
  d.committed = [memory = memory_, source = source_.name, name, value]() {
    if (value.empty()) memory->forget(source, name);
    else memory->remember(source, name, value);
  };
  try {
    sink_(std::move(d));
  } catch (const std::exception& e) {
    // Not taken: as if never reported, so the next look at the folder finds it again.
    if (before) known_[name] = *before;
    else known_.erase(name);
    spdlog::error("source '{}': the broker did not take the event for {}: {}", source_.name, name, e.what());
  }
}

}  // namespace pine::sources
