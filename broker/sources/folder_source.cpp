#include "broker/sources/folder_source.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/log.h"

namespace pine::sources {
namespace {

std::string joinRel(const std::string& dir, const std::string& name) { return dir.empty() ? name : dir + "/" + name; }

// source_state's value for a file: "size mtimeNs sha256".
std::string encode(uint64_t size, int64_t mtimeNs, const std::string& sha) {
  return std::to_string(size) + " " + std::to_string(mtimeNs) + " " + sha;
}

bool decode(const std::string& text, uint64_t& size, int64_t& mtimeNs, std::string& sha) {
  std::istringstream in(text);
  return static_cast<bool>(in >> size >> mtimeNs >> sha);
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
  for (auto& [name, value] : memory_->recall(source_.name)) {
    Seen s;
    if (decode(value, s.size, s.mtimeNs, s.sha256)) known_[name] = s;
  }
  if (auto why = notify_->watch(source_.path, "")) return "source '" + source_.name + "': " + *why + "; it is not started";
  watched_.insert("");
  listening_ = listen().eagerlyEvaluate([name = source_.name](kj::Exception&& e) {
    spdlog::error("source '{}': stopped watching: {}", name, e.getDescription().cStr());
  });
  lookAll();
  return std::nullopt;
}

kj::Promise<void> FolderSource::listen() {
  return notify_->next().then([this](std::vector<FolderNotice> notices) {
    onNotices(notices);
    return listen();
  });
}

void FolderSource::onNotices(const std::vector<FolderNotice>& notices) {
  for (const auto& n : notices) {
    if (n.overflow) {
      spdlog::warn("source '{}': the system dropped change notices; looking at the whole folder again", source_.name);
      lookAll();
      continue;
    }
    if (n.name.empty()) {
      look(n.dir, 0, nullptr);
      continue;
    }
    std::string rel = joinRel(n.dir, n.name);
    FileFacts f = factsBeneath(root_.get(), rel);
    if (f.dir) {
      if (source_.recursive) look(rel, (int)std::count(rel.begin(), rel.end(), '/') + 1, nullptr);
      continue;
    }
    if (!f.exists && watched_.count(rel)) {
      // A folder went away (or was moved out): what was reported below it is gone too.
      notify_->unwatch(rel);
      for (auto it = watched_.begin(); it != watched_.end();)
        it = (*it == rel || it->rfind(rel + "/", 0) == 0) ? watched_.erase(it) : std::next(it);
      for (auto it = known_.lower_bound(rel + "/"); it != known_.end() && it->first.rfind(rel + "/", 0) == 0; ++it)
        touch(it->first);
      continue;
    }
    touch(rel);
  }
}

void FolderSource::lookAll() {
  std::set<std::string> seen;
  look("", 0, &seen);
  // What was reported and is no longer there (removed while nobody watched, or a lost notice).
  for (auto& [name, s] : known_)
    if (!seen.count(name)) touch(name);
}

void FolderSource::look(const std::string& dir, int depth, std::set<std::string>* seen) {
  Fd d = openDirBeneath(root_.get(), dir);
  if (!d.ok()) return;  // gone, or a link put in its place: the notice about it says so
  if (!watched_.count(dir)) {
    std::string full = dir.empty() ? source_.path : source_.path + "/" + dir;
    if (auto why = notify_->watch(full, dir)) {
      spdlog::warn("source '{}': {}", source_.name, *why);
      memory_->noteError(source_.name, *why);
    } else {
      watched_.insert(dir);
    }
  }
  std::set<std::string> here;
  for (const auto& e : listDir(d.get())) {
    std::string rel = joinRel(dir, e.name);
    if (e.dir) {
      if (source_.recursive && depth < options_.maxDepth) look(rel, depth + 1, seen);
      continue;
    }
    if (!e.regular || secretsFileName(e.name)) continue;  // links, pipes, devices, .env: never read
    here.insert(rel);
    if (seen) seen->insert(rel);
    auto k = known_.find(rel);
    if (k != known_.end()) {
      FileFacts f = factsBeneath(root_.get(), rel);
      if (f.regular && f.size == k->second.size && f.mtimeNs == k->second.mtimeNs) continue;
    }
    touch(rel);
  }
  if (seen) return;  // lookAll() compares with everything it saw
  // Reported files directly in this folder that are gone.
  std::string prefix = dir.empty() ? "" : dir + "/";
  for (auto it = known_.lower_bound(prefix); it != known_.end() && it->first.rfind(prefix, 0) == 0; ++it)
    if (it->first.find('/', prefix.size()) == std::string::npos && !here.count(it->first)) touch(it->first);
}

void FolderSource::touch(const std::string& name) {
  if (secretsFileName(name)) return;
  long long due = nowMs() + source_.debounceMs;
  auto it = pending_.find(name);
  if (it != pending_.end()) {
    it->second.dueMs = due;  // still changing: it settles later
    wake();
    return;
  }
  if (pending_.size() + toHash_.size() >= options_.maxPending) {
    if (dropped_++ % 1000 == 0)
      spdlog::warn("source '{}': more than {} changed files wait; {} change(s) dropped so far, found again by a "
                   "later look at the folder",
                   source_.name, options_.maxPending, dropped_);
    if (!lookAgain_) memory_->noteError(source_.name, "too many changed files at once: some are reported late");
    lookAgain_ = true;
    return;
  }
  pending_[name] = Pending{factsBeneath(root_.get(), name), due};
  wake();
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
  if (hashing_ || !toHash_.empty()) return 0;
  if (pending_.empty()) return -1;
  long long due = pending_.begin()->second.dueMs;
  for (auto& [name, p] : pending_) due = std::min(due, p.dueMs);
  return std::max(0LL, due - now);
}

kj::Promise<void> FolderSource::loop() {
  long long delay = nextDelayMs(nowMs());
  if (delay < 0 && lookAgain_) {
    lookAgain_ = false;  // the queue drained after a flood: find what was dropped
    lookAll();
    delay = nextDelayMs(nowMs());
  }
  if (delay < 0) {
    working_ = false;
    return kj::READY_NOW;
  }
  // A zero delay still goes through the timer's turn, so notices and requests get their share.
  return io_.provider->getTimer().afterDelay(delay * kj::MILLISECONDS).then([this]() {
    settle(nowMs());
    hashSome();
    return loop();
  });
}

void FolderSource::settle(long long now) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.dueMs > now) {
      ++it;
      continue;
    }
    const std::string name = it->first;
    FileFacts f = factsBeneath(root_.get(), name);
    if (!(f == it->second.facts)) {  // changed since the last look: wait for quiet again
      it->second.facts = f;
      it->second.dueMs = now + source_.debounceMs;
      ++it;
      continue;
    }
    it = pending_.erase(it);
    auto k = known_.find(name);
    if (!f.regular) {
      if (k != known_.end()) report(name, "removed", nullptr);
      continue;
    }
    if (k != known_.end() && k->second.size == f.size && k->second.mtimeNs == f.mtimeNs) continue;
    if (queuedHash_.insert(name).second) toHash_.push_back(name);
  }
}

void FolderSource::hashSome() {
  size_t budget = options_.bytesPerTurn;
  std::vector<char> buf(64 * 1024);
  while (budget > 0) {
    if (!hashing_) {
      if (toHash_.empty()) return;
      std::string name = toHash_.front();
      toHash_.pop_front();
      queuedHash_.erase(name);
      Fd fd = openFileBeneath(root_.get(), name);
      if (!fd.ok()) {
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
    ssize_t n = read(hashing_->fd.get(), buf.data(), std::min(buf.size(), budget));
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) {
      hashing_->sha.update(buf.data(), (size_t)n);
      hashing_->done += (uint64_t)n;
      budget -= (size_t)n;
      continue;
    }
    finishHash(*hashing_);
    hashing_.reset();
  }
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
  Seen seen{h.facts.size, h.facts.mtimeNs, tooLarge ? std::string("-") : h.sha.hex()};
  auto k = known_.find(h.name);
  if (k != known_.end() && !tooLarge && k->second.sha256 == seen.sha256) {
    rememberQuietly(h.name, seen);  // touched, not changed
    return;
  }
  report(h.name, k == known_.end() ? "new" : "changed", &seen);
}

void FolderSource::rememberQuietly(const std::string& name, const Seen& seen) {
  known_[name] = seen;
  memory_->remember(source_.name, name, encode(seen.size, seen.mtimeNs, seen.sha256));
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
  }
  Draft d;
  d.source = source_.name;
  d.topic = "folder/" + source_.name + "/" + change;
  d.trust = source_.trust == config::Trust::Owner ? "owner" : "untrusted";
  // A name that is not UTF-8 is shown with U+FFFD; the remembered name keeps its bytes.
  d.payload = payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Remembered only once the event is committed: a crash in between reports the file again
  // rather than never.
  std::string value = seen ? encode(seen->size, seen->mtimeNs, seen->sha256) : "";
  d.committed = [memory = memory_, source = source_.name, name, value]() {
    if (value.empty()) memory->forget(source, name);
    else memory->remember(source, name, value);
    memory->noteEvent(source);
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
