#include "sandbox/linux/owned_tree.h"

#include <kj/io.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace pine::sandbox {
namespace {


[[noreturn]] void failAt(const std::string& what, const std::string& path) {
  throw std::runtime_error(what + " " + path + ": " + strerror(errno));
}

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
// A regular file is changed through a descriptor of the inode that was checked. O_NONBLOCK
// and O_NOCTTY: if the name was swapped for a fifo or a terminal, opening it neither waits
// nor takes it over (and the fstat below leaves it alone).
constexpr int kFileFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

// Owner, group and mode of the open `fd` (described by `st`) as `rule` says, for a folder or a file.
bool applyToFd(int fd, const struct stat& st, const TreeRule& rule, bool folder, const std::string& path) {
  bool changed = false;
  uid_t uid = rule.uid == (uid_t)-1 ? st.st_uid : rule.uid;
  gid_t gid = rule.gid == (gid_t)-1 ? st.st_gid : rule.gid;
  if (uid != st.st_uid || gid != st.st_gid) {
    if (fchown(fd, uid, gid) != 0) failAt("chown", path);
    changed = true;
  }
  // chown clears set-id bits of a file: take the mode as it is now.
  struct stat now = st;
  if (changed && fstat(fd, &now) != 0) failAt("stat", path);
  mode_t want = (now.st_mode & 07777) | (folder ? rule.dirAdd : rule.fileAdd);
  if (want != (now.st_mode & 07777)) {
    if (fchmod(fd, want) != 0) failAt("chmod", path);
    changed = true;
  }
  return changed;
}

void walk(int dirFd, dev_t dev, const TreeRule& rule, const std::string& path, int depth, int maxDepth,
          TreeChange& out);

// One entry of the open folder `dirFd` (on device `dev`): a folder is changed and, with
// `recurse`, walked; a regular file with one link is changed; anything else is left alone.
void entry(int dirFd, const char* name, dev_t dev, const TreeRule& rule, const std::string& child, bool recurse,
           int depth, int maxDepth, TreeChange& out) {
  struct stat st;
  if (fstatat(dirFd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) failAt("stat", child);
    ++out.vanished;
  } else if (S_ISLNK(st.st_mode)) {
    ++out.symlinks;
  } else if (S_ISDIR(st.st_mode)) {
    if (st.st_dev != dev) {
      ++out.mounts;
      return;
    }
    kj::AutoCloseFd sub(openat(dirFd, name, kDirFlags));
    struct stat now;
    if (sub.get() < 0 || fstat(sub.get(), &now) != 0 || !S_ISDIR(now.st_mode)) {
      ++out.vanished;  // swapped for a link or a file since it was listed: not ours to follow
      return;
    }
    if (now.st_dev != dev) {
      ++out.mounts;
      return;
    }
    if (applyToFd(sub.get(), now, rule, true, child)) ++out.changed;
    if (recurse) walk(sub.get(), dev, rule, child, depth + 1, maxDepth, out);
  } else if (S_ISREG(st.st_mode)) {
    if (st.st_nlink > 1) {
      ++out.linkedFiles;
      return;
    }
    kj::AutoCloseFd file(openat(dirFd, name, kFileFlags));
    struct stat now;
    if (file.get() < 0 || fstat(file.get(), &now) != 0 || !S_ISREG(now.st_mode) || now.st_dev != dev) {
      ++out.vanished;
      return;
    }
    if (now.st_nlink > 1) {  // linked since it was listed
      ++out.linkedFiles;
      return;
    }
    if (applyToFd(file.get(), now, rule, false, child)) ++out.changed;
  } else {
    ++out.other;
  }
}

void walk(int dirFd, dev_t dev, const TreeRule& rule, const std::string& path, int depth, int maxDepth,
          TreeChange& out) {
  if (depth > maxDepth) {
    errno = ELOOP;
    failAt("walk (more than " + std::to_string(maxDepth) + " folders deep)", path);
  }
  int listFd = openat(dirFd, ".", kDirFlags);
  if (listFd < 0) failAt("open", path);
  DIR* d = fdopendir(listFd);
  if (!d) {
    close(listFd);
    failAt("opendir", path);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> closer(d, closedir);
  while (dirent* e = readdir(d)) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    entry(dirFd, e->d_name, dev, rule, path + "/" + e->d_name, true, depth, maxDepth, out);
  }
}

void add(TreeChange& to, const TreeChange& from) {
  to.changed += from.changed;
  to.linkedFiles += from.linkedFiles;
  to.symlinks += from.symlinks;
  to.mounts += from.mounts;
  to.vanished += from.vanished;
  to.other += from.other;
}

// The plain names of `rel`, or an empty list when one is not plain.
std::vector<std::string> plainNames(const std::string& rel) {
  std::vector<std::string> names;
  size_t at = 0;
  while (at <= rel.size()) {
    size_t slash = rel.find('/', at);
    std::string name = rel.substr(at, slash == std::string::npos ? std::string::npos : slash - at);
    if (name.empty() || name == "." || name == "..") return {};
    names.push_back(name);
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  return names;
}

}  // namespace

int openFolderBelow(int baseFd, const std::string& rel) {
  std::vector<std::string> names = plainNames(rel);
  if (names.empty()) {
    errno = EINVAL;
    return -1;
  }
  struct stat base;
  if (fstat(baseFd, &base) != 0) return -1;
  int cur = dup(baseFd);
  if (cur < 0) return -1;
  for (const auto& name : names) {
    int next = openat(cur, name.c_str(), kDirFlags);
    int saved = errno;
    close(cur);
    if (next < 0) {
      errno = saved;
      return -1;
    }
    struct stat st;
    if (fstat(next, &st) != 0) {
      saved = errno;
      close(next);
      errno = saved;
      return -1;
    }
    if (st.st_dev != base.st_dev) {
      close(next);
      errno = EXDEV;
      return -1;
    }
    cur = next;
  }
  return cur;
}

TreeChange applyToEntry(int dirFd, const std::string& name, const TreeRule& rule, const std::string& path,
                        bool recursive) {
  TreeChange out;
  struct stat st;
  if (fstat(dirFd, &st) != 0) failAt("stat", path);
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    errno = EINVAL;
    failAt("change (a plain name only)", path);
  }
  entry(dirFd, name.c_str(), st.st_dev, rule, path, recursive, 1, 256, out);
  return out;
}

TreeChange applyToTree(int rootFd, const TreeRule& rule, const std::string& path, int maxDepth) {
  TreeChange out;
  struct stat st;
  if (fstat(rootFd, &st) != 0) failAt("stat", path);
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    failAt("walk", path);
  }
  if (applyToFd(rootFd, st, rule, true, path)) ++out.changed;
  walk(rootFd, st.st_dev, rule, path, 1, maxDepth, out);
  return out;
}

namespace {

// Each of `rels` below `base` opened (never through a link or a mount) after making the
// folders above it traversable (o+x, never o+r): others reach it without listing what
// lies beside it. `use` gets the open folder and its path.
template <typename Use>
void forEachBelow(const std::string& base, const std::vector<std::string>& rels, Use use) {
  kj::AutoCloseFd baseFd(open(base.c_str(), kDirFlags));
  if (baseFd.get() < 0) failAt("open", base);
  for (const auto& rel : rels) {
    const std::string path = base + "/" + rel;
    std::vector<std::string> names = plainNames(rel);
    if (names.empty()) {
      errno = EINVAL;
      failAt("open (plain names only)", path);
    }
    std::string above;
    for (size_t i = 0; i < names.size(); ++i) {
      kj::AutoCloseFd dir(i == 0 ? dup(baseFd.get()) : openFolderBelow(baseFd.get(), above));
      const std::string at = i == 0 ? base : base + "/" + above;
      if (dir.get() < 0) failAt("open", at);
      struct stat st;
      if (fstat(dir.get(), &st) != 0) failAt("stat", at);
      if (!(st.st_mode & S_IXOTH) && fchmod(dir.get(), (st.st_mode & 07777) | S_IXOTH) != 0) failAt("chmod", at);
      above += (above.empty() ? "" : "/") + names[i];
    }
    kj::AutoCloseFd root(openFolderBelow(baseFd.get(), rel));
    if (root.get() < 0) failAt("open (a folder, never a link or a mount)", path);
    use(root.get(), path);
  }
}

}  // namespace

TreeChange handOverToWorker(const std::string& base, const std::vector<std::string>& rels, uid_t uid, gid_t gid) {
  TreeChange out;
  forEachBelow(base, rels, [&](int root, const std::string& path) {
    struct stat st;
    if (fstat(root, &st) != 0) failAt("stat", path);
    if (st.st_uid == uid && st.st_gid == gid) return;  // the worker's already: nothing to walk
    add(out, applyToTree(root, TreeRule{uid, gid, 0, 0}, path));
  });
  return out;
}

TreeChange shareReadOnlyBelow(const std::string& base, const std::vector<std::string>& rels) {
  TreeChange out;
  forEachBelow(base, rels, [&](int root, const std::string& path) {
    add(out, applyToTree(root, TreeRule{(uid_t)-1, (gid_t)-1, S_IROTH, S_IROTH | S_IXOTH}, path));
  });
  return out;
}

}  // namespace pine::sandbox
