#include "checkpoint/manifest.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "checkpoint/fs_walk.h"

namespace pine::checkpoint {
namespace {

struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower((unsigned char)c));
  return s;
}

void makeDir(int at, const std::string& name) {
  if (mkdirat(at, name.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot create " + name + " in the checkpoint folder: " + strerror(errno));
}

// Stores bytes as blobs/ab/<sha>, written to a temporary name first so that a blob is whole or absent.
void storeBlob(int shadow, const std::string& sha, const std::string& bytes) {
  makeDir(shadow, "blobs");
  const std::string dir = "blobs/" + sha.substr(0, 2);
  makeDir(shadow, dir);
  const std::string path = dir + "/" + sha;
  struct stat st;
  if (fstatat(shadow, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return;
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  Fd f(openat(shadow, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (f.fd < 0) throw std::runtime_error("cannot write " + path + " in the checkpoint folder: " + strerror(errno));
  writeAll(f.fd, bytes);
  if (renameat(shadow, tmp.c_str(), shadow, path.c_str()) != 0)
    throw std::runtime_error("cannot write " + path + " in the checkpoint folder: " + strerror(errno));
}

struct Walk {
  int shadow;  // -1: hash only, store nothing
  const Limits& limits;
  dev_t device;
  Manifest out;
  uint64_t total = 0;

  // One entry named `name` in the open folder `dir`; rel is its workspace-relative path.
  void entry(int dir, const std::string& name, const std::string& rel, int depth) {
    if (out.files.size() + out.skipped.size() >= limits.maxEntries) {
      if (out.skipped.empty() || out.skipped.back().why.rfind("more than", 0) != 0)
        out.skipped.push_back({rel, "more than " + std::to_string(limits.maxEntries) + " entries: the rest is not kept"});
      return;
    }
    if (auto why = secretName(name); !why.empty()) return out.skipped.push_back({rel, why});
    struct stat st;
    if (fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;  // gone meanwhile
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t n = readlinkat(dir, name.c_str(), buf, sizeof buf);
      if (n < 0 || size_t(n) == sizeof buf) return out.skipped.push_back({rel, "a link whose target cannot be read"});
      Entry e;
      e.link = true;
      e.target.assign(buf, size_t(n));
      out.files[rel] = e;
      return;
    }
    if (S_ISDIR(st.st_mode)) {
      if (name == ".git") return out.skipped.push_back({rel, "a git folder: its history is git's own"});
      if (st.st_dev != device) return out.skipped.push_back({rel, "another file system mounted here"});
      if (depth >= limits.maxDepth) return out.skipped.push_back({rel, "deeper than " + std::to_string(limits.maxDepth) + " folders"});
      Fd sub(openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (sub.fd < 0) return out.skipped.push_back({rel, std::string("cannot open: ") + strerror(errno)});
      folder(sub.fd, rel + "/", depth + 1);
      return;
    }
    if (!S_ISREG(st.st_mode)) return out.skipped.push_back({rel, "not a file, folder or link"});
    if (uint64_t(st.st_size) > limits.maxFileBytes)
      return out.skipped.push_back({rel, "larger than " + std::to_string(limits.maxFileBytes) + " bytes"});
    if (total + uint64_t(st.st_size) > limits.maxTotalBytes)
      return out.skipped.push_back({rel, "past the checkpoint's total of " + std::to_string(limits.maxTotalBytes) + " bytes"});
    Fd f(openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat again;
    if (f.fd < 0 || fstat(f.fd, &again) != 0 || !S_ISREG(again.st_mode) || again.st_ino != st.st_ino)
      return out.skipped.push_back({rel, "changed while read"});
    std::string bytes;
    try {
      bytes = readAll(f.fd, limits.maxFileBytes);
    } catch (std::exception& e) {
      return out.skipped.push_back({rel, e.what()});
    }
    total += bytes.size();
    Entry e;
    e.mode = again.st_mode & 07777;
    e.size = bytes.size();
    e.sha256 = sha256Hex(bytes);
    if (shadow >= 0) storeBlob(shadow, e.sha256, bytes);
    out.files[rel] = e;
  }

  void folder(int dir, const std::string& prefix, int depth) {
    int copy = fcntl(dir, F_DUPFD_CLOEXEC, 3);
    DIR* d = fdopendir(copy);
    if (!d) {
      close(copy);
      return;
    }
    rewinddir(d);  // the copy shares its offset with `dir`, which an earlier walk may have moved
    std::vector<std::string> names;
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    for (auto& n : names) entry(dir, n, prefix + n, depth);
  }
};

}  // namespace

std::string secretName(const std::string& name) {
  std::string l = lower(name);
  if (l == ".env" || l.rfind(".env.", 0) == 0) return "a secrets file: never kept";
  return "";
}

Manifest snapshot(int workspace, int shadow, const Limits& limits) {
  struct stat st;
  if (fstat(workspace, &st) != 0) throw std::runtime_error(std::string("the workspace: ") + strerror(errno));
  Walk w{shadow, limits, st.st_dev, {}};
  w.folder(workspace, "", 0);
  return std::move(w.out);
}

std::map<std::string, Entry> current(int workspace, const std::vector<std::string>& paths, const Limits& limits) {
  struct stat root;
  if (fstat(workspace, &root) != 0) throw std::runtime_error(std::string("the workspace: ") + strerror(errno));
  std::map<std::string, Entry> out;
  for (const auto& p : paths) {
    std::string why;
    Fd dir(openParent(workspace, p, false, why));
    if (dir.fd < 0) continue;  // absent (or behind a link): not there
    Walk w{-1, limits, root.st_dev, {}};
    std::string name = p.substr(p.find_last_of('/') == std::string::npos ? 0 : p.find_last_of('/') + 1);
    w.entry(dir.fd, name, p, 0);
    auto it = w.out.files.find(p);
    if (it != w.out.files.end()) out[p] = it->second;
  }
  return out;
}

nlohmann::json toJson(const Manifest& m) {
  nlohmann::json files = nlohmann::json::object();
  for (auto& [path, e] : m.files) {
    if (e.link)
      files[path] = {{"type", "link"}, {"target", e.target}};
    else
      files[path] = {{"type", "file"}, {"mode", e.mode}, {"size", e.size}, {"sha256", e.sha256}};
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (auto& s : m.skipped) skipped.push_back({{"path", s.path}, {"why", s.why}});
  return {{"files", files}, {"skipped", skipped}};
}

Manifest fromJson(const nlohmann::json& j) {
  Manifest m;
  for (auto& [path, f] : j.at("files").items()) {
    Entry e;
    e.link = f.at("type") == "link";
    if (e.link) {
      e.target = f.at("target");
    } else {
      e.mode = f.at("mode");
      e.size = f.at("size");
      e.sha256 = f.at("sha256");
    }
    m.files[path] = e;
  }
  for (auto& s : j.at("skipped")) m.skipped.push_back({s.at("path"), s.at("why")});
  return m;
}

void save(int shadow, const std::string& id, const Manifest& m) {
  makeDir(shadow, "manifests");
  const std::string path = "manifests/" + id + ".json", tmp = path + ".tmp";
  Fd f(openat(shadow, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (f.fd < 0) throw std::runtime_error("cannot write " + path + " in the checkpoint folder: " + strerror(errno));
  writeAll(f.fd, toJson(m).dump());
  if (renameat(shadow, tmp.c_str(), shadow, path.c_str()) != 0)
    throw std::runtime_error("cannot write " + path + " in the checkpoint folder: " + strerror(errno));
}

bool exists(int shadow, const std::string& id) {
  struct stat st;
  return fstatat(shadow, ("manifests/" + id + ".json").c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

Manifest load(int shadow, const std::string& id) {
  Fd f(openat(shadow, ("manifests/" + id + ".json").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (f.fd < 0) throw std::runtime_error("no checkpoint '" + id + "': " + strerror(errno));
  return fromJson(nlohmann::json::parse(readAll(f.fd, 256u << 20)));
}

std::string readBlob(int shadow, const std::string& sha) {
  if (sha.size() != 64 || sha.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw std::runtime_error("bad blob name");
  Fd f(openat(shadow, ("blobs/" + sha.substr(0, 2) + "/" + sha).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (f.fd < 0) throw std::runtime_error("the checkpoint folder has lost blob " + sha);
  return readAll(f.fd, 1ull << 32);
}

}  // namespace pine::checkpoint
