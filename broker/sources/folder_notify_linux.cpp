// Folder notices on Linux: one inotify descriptor per folder source, read when KJ's event port
// says it is readable. Each watch is one folder; links are not followed (IN_DONT_FOLLOW), and a
// watch that lands elsewhere through a swapped parent only yields spurious notices: every read
// of a file goes through the folder source's own descriptors (folder_files.cpp).
#include <errno.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>

#include "broker/sources/folder_notify.h"

namespace pine::sources {
namespace {

constexpr uint32_t kMask = IN_CREATE | IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO |
                           IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK;

class Inotify final : public FolderNotify {
 public:
  Inotify(kj::UnixEventPort& port, int fd)
      : fd_(fd), observer_(std::make_unique<kj::UnixEventPort::FdObserver>(port, fd, kj::UnixEventPort::FdObserver::OBSERVE_READ)) {}
  ~Inotify() override {
    observer_.reset();  // unregistered before the descriptor closes
    close(fd_);
  }

  std::optional<std::string> watch(const std::string& full, const std::string& rel) override {
    int wd = inotify_add_watch(fd_, full.c_str(), kMask);
    if (wd < 0) {
      if (errno == ENOSPC)
        return "cannot watch " + full + ": the system's limit of watched folders is reached (raise "
               "fs.inotify.max_user_watches)";
      return "cannot watch " + full + ": " + strerror(errno);
    }
    // Another folder than the one watched under this name before (it was replaced): the old
    // watch would report its changes as this one's.
    auto old = byRel_.find(rel);
    if (old != byRel_.end() && old->second != wd) {
      if (auto w = byWd_.find(old->second); w != byWd_.end() && w->second == rel) {
        inotify_rm_watch(fd_, old->second);
        byWd_.erase(w);
      }
    }
    // The same folder under another name (moved within the tree): the watch is this name's now.
    if (auto same = byWd_.find(wd); same != byWd_.end() && same->second != rel) {
      if (auto r = byRel_.find(same->second); r != byRel_.end() && r->second == wd) byRel_.erase(r);
    }
    byWd_[wd] = rel;
    byRel_[rel] = wd;
    return std::nullopt;
  }

  void unwatch(const std::string& rel) override {
    auto drop = [this](std::map<std::string, int>::iterator it) {
      if (auto w = byWd_.find(it->second); w != byWd_.end() && w->second == it->first) {
        inotify_rm_watch(fd_, it->second);
        byWd_.erase(w);
      }
      return byRel_.erase(it);
    };
    if (rel.empty()) {
      for (auto it = byRel_.begin(); it != byRel_.end();) it = drop(it);
      return;
    }
    if (auto it = byRel_.find(rel); it != byRel_.end()) drop(it);
    for (auto it = byRel_.lower_bound(rel + "/"); it != byRel_.end() && it->first.rfind(rel + "/", 0) == 0;) it = drop(it);
  }


  kj::Promise<std::vector<FolderNotice>> next() override {
    auto got = drain();
    if (!got.empty()) return kj::mv(got);
    return observer_->whenBecomesReadable().then([this]() { return next(); });
  }

 private:
  std::vector<FolderNotice> drain() {
    std::vector<FolderNotice> out;
    alignas(struct inotify_event) char buf[16384];
    for (;;) {
      ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0) break;  // EAGAIN: all read
      for (char* p = buf; p < buf + n;) {
        auto* ev = reinterpret_cast<struct inotify_event*>(p);
        p += sizeof(struct inotify_event) + ev->len;
        if (ev->mask & IN_Q_OVERFLOW) {
          out.push_back({"", "", true});
          continue;
        }
        auto it = byWd_.find(ev->wd);
        if (it == byWd_.end()) continue;
        if (ev->mask & IN_IGNORED) {  // the folder went away or was unwatched
          if (auto r = byRel_.find(it->second); r != byRel_.end() && r->second == ev->wd) byRel_.erase(r);
          byWd_.erase(it);
          continue;
        }
        FolderNotice notice;
        notice.dir = it->second;
        if (ev->len) notice.name = ev->name;  // NUL-padded by the kernel
        out.push_back(std::move(notice));
      }
    }
    return out;
  }

  int fd_;
  std::unique_ptr<kj::UnixEventPort::FdObserver> observer_;  // unique_ptr: its destructor may throw, ours may not
  std::map<int, std::string> byWd_;
  std::map<std::string, int> byRel_;  // the same, by folder
};

}  // namespace

kj::Own<FolderNotify> makeFolderNotify(kj::UnixEventPort& port, std::string& whyNot) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    whyNot = std::string("cannot watch folders: inotify_init1: ") + strerror(errno) +
             (errno == EMFILE ? " (raise fs.inotify.max_user_instances)" : "");
    return kj::Own<FolderNotify>();
  }
  return kj::heap<Inotify>(port, fd);
}

}  // namespace pine::sources
