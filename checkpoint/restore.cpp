#include "checkpoint/restore.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "checkpoint/changes.h"
#include "checkpoint/fs_walk.h"

namespace pine::checkpoint {
namespace {

std::string baseName(const std::string& p) {
  auto slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// Puts `want` (nullptr: nothing) at path. Returns why not, or "".
std::string put(int workspace, int shadow, const std::string& path, const Entry* want) {
  std::string why;
  int dir = openParent(workspace, path, want != nullptr, why);
  if (dir < 0) return want ? why : "";  // nothing to remove behind a link or a missing folder
  const std::string name = baseName(path);
  std::string err;
  if (!want) {
    struct stat st;
    if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
        unlinkat(dir, name.c_str(), 0) != 0)
      err = std::string("cannot remove: ") + strerror(errno);
    close(dir);
    return err;
  }
  // Made under a temporary name, then renamed over whatever is there: a link there is replaced
  // itself, never followed.
  const std::string tmp = "." + name + ".pine-undo";
  unlinkat(dir, tmp.c_str(), 0);
  if (want->link) {
    if (symlinkat(want->target.c_str(), dir, tmp.c_str()) != 0) err = std::string("cannot make the link: ") + strerror(errno);
  } else {
    int f = openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f < 0) {
      err = std::string("cannot write: ") + strerror(errno);
    } else {
      try {
        writeAll(f, readBlob(shadow, want->sha256));
        if (fchmod(f, want->mode & 0777) != 0) err = std::string("cannot set its mode: ") + strerror(errno);
      } catch (std::exception& e) {
        err = e.what();
      }
      close(f);
    }
  }
  struct stat st;
  if (err.empty() && fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
    err = "a folder is there now";
  if (err.empty() && renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) err = std::string("cannot put it back: ") + strerror(errno);
  if (!err.empty()) unlinkat(dir, tmp.c_str(), 0);
  close(dir);
  return err;
}

}  // namespace

nlohmann::json undo(int workspace, int shadow, const Manifest& before, const Manifest& after, bool force) {
  // Every path the task touched: for a rename both names.
  std::set<std::string> paths;
  for (const auto& c : compare(before, after)) {
    paths.insert(c.path);
    if (!c.from.empty()) paths.insert(c.from);
  }
  auto now = current(workspace, {paths.begin(), paths.end()});
  nlohmann::json changedSince = nlohmann::json::array();
  for (const auto& p : paths) {
    auto a = after.files.find(p);
    auto n = now.find(p);
    bool same = (a == after.files.end() && n == now.end()) ||
                (a != after.files.end() && n != now.end() && a->second == n->second);
    if (!same) changedSince.push_back(p);
  }
  nlohmann::json out = {{"ok", true}, {"restored", nlohmann::json::array()}, {"removed", nlohmann::json::array()},
                        {"changed_since", changedSince}, {"failed", nlohmann::json::array()}};
  if (!changedSince.empty() && !force) {
    out["ok"] = false;
    return out;
  }
  for (const auto& p : paths) {
    auto b = before.files.find(p);
    const Entry* want = b == before.files.end() ? nullptr : &b->second;
    std::string why = put(workspace, shadow, p, want);
    if (!why.empty()) {
      out["failed"].push_back({{"path", p}, {"why", why}});
      out["ok"] = false;
    } else {
      out[want ? "restored" : "removed"].push_back(p);
    }
  }
  return out;
}

}  // namespace pine::checkpoint
