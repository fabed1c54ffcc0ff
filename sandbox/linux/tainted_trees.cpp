#include "sandbox/linux/tainted_trees.h"

#include "sandbox/linux/owned_tree.h"
#include "sandbox/policy.h"

#include <kj/io.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <utility>

namespace pine::sandbox {
namespace {

constexpr int kFolderOpen = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

bool exists(int dirFd, const char* name) {
  struct stat st;
  return fstatat(dirFd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// At least what git itself takes for a repository folder (setup.c's is_git_directory): HEAD,
// and objects and refs (or a commondir that stands for them). git only asks access(X_OK) of
// objects and refs, which a link to a folder elsewhere or an executable file passes too, so
// any kind of entry counts here: a folder taken for a repository by mistake only loses hooks
// and settings that a tainted run gave it.
bool isGitFolder(int fd) {
  if (!exists(fd, "HEAD")) return false;
  return exists(fd, "commondir") || (exists(fd, "objects") && exists(fd, "refs"));
}

// Every git folder below the open folder `fd` (relative path `rel`), and every commondir
// file in one (as "<folder>/commondir": it points git at another folder's config).
class Finder {
 public:
  Finder(GitFolders& out, size_t budget) : out_(out), budget_(budget) {}

  void walk(int fd, const std::string& rel, dev_t dev, int depth) {
    if (depth > 64 || folders_++ >= budget_) {
      out_.complete = false;
      return;
    }
    const bool git = isGitFolder(fd);
    if (git) {
      out_.found.insert(rel);
      if (exists(fd, "commondir")) out_.found.insert(join(rel, "commondir"));
    }
    out_.visited.insert(rel);
    // A `.git` that is a file ("gitdir: <anywhere>") or a link points git at a folder that may
    // lie outside every tree walked here.
    struct stat dotGit;
    if (fstatat(fd, ".git", &dotGit, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(dotGit.st_mode))
      // Known by what it is too: one there before the run, rewritten by it, is a new pointer.
      out_.gitPointers[join(rel, ".git")] = std::to_string(dotGit.st_ino) + ":" + std::to_string(dotGit.st_size) + ":" +
                                            std::to_string(dotGit.st_mtim.tv_sec) + "." +
                                            std::to_string(dotGit.st_mtim.tv_nsec);
    // The instruction names here, before any folder below is walked: a walk that runs out of
    // budget below has still seen every one of the folders it visited.
    struct stat named;
    for (const auto& n : instructionNames())
      if (fstatat(fd, n.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0) out_.instructions.insert(join(rel, n));
    int listFd = openat(fd, ".", kFolderOpen);
    if (listFd < 0) return;
    DIR* d = fdopendir(listFd);
    if (!d) {
      close(listFd);
      return;
    }
    std::unique_ptr<DIR, int (*)(DIR*)> closer(d, closedir);
    while (dirent* e = readdir(d)) {
      const char* name = e->d_name;
      if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
      // A repository's objects are thousands of folders and never hold another repository.
      if (git && !strcmp(name, "objects")) continue;
      struct stat st;
      if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) || st.st_dev != dev) continue;
      kj::AutoCloseFd sub(openat(fd, name, kFolderOpen));
      if (sub.get() < 0) continue;
      walk(sub.get(), join(rel, name), dev, depth + 1);
      if (!out_.complete) return;
    }
  }

  static std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "/" + b; }

 private:
  GitFolders& out_;
  size_t budget_;
  size_t folders_ = 0;
};

GitFolders find(int rootFd, size_t maxFolders) {
  GitFolders out;
  struct stat st;
  if (fstat(rootFd, &st) != 0) return out;
  Finder(out, maxFolders).walk(rootFd, "", st.st_dev, 0);
  return out;
}

// `rel` below `rootFd` ("" is the root itself), never through a link or a mount.
int openBelow(int rootFd, const std::string& rel) { return rel.empty() ? dup(rootFd) : openFolderBelow(rootFd, rel); }

// What `git init` writes, less `bare` (git then decides as it does for any folder).
constexpr char kPlainConfig[] = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n";

bool moveAside(int fd, const char* name, const std::string& stamp) {
  std::string aside = std::string(name) + ".tainted-" + stamp;
  return renameat(fd, name, fd, aside.c_str()) == 0;
}

void giveTo(int fd, unsigned uid, unsigned gid) {
  if (uid != (unsigned)-1 && fchown(fd, (uid_t)uid, (gid_t)gid) != 0) {
    // Left pined's: the worker cannot change it, which is what a tainted run deserves anyway.
  }
}

}  // namespace

std::vector<std::string> createMissingFiles(const std::string& base, const std::string& rel,
                                            const std::vector<std::string>& names, unsigned uid, unsigned gid) {
  kj::AutoCloseFd baseFd(open(base.c_str(), kFolderOpen));
  kj::AutoCloseFd dir(baseFd.get() < 0 ? -1 : openBelow(baseFd.get(), rel));
  if (dir.get() < 0)
    throw std::runtime_error("open " + base + "/" + rel + " (a folder, never a link): " + strerror(errno));
  std::vector<std::string> created;
  for (const auto& entry : names) {
    if (!entry.empty() && entry.back() == '/') {
      const std::string name = entry.substr(0, entry.size() - 1);
      if (mkdirat(dir.get(), name.c_str(), 0700) != 0) {
        if (errno == EEXIST) continue;
        throw std::runtime_error("create " + base + "/" + rel + "/" + name + ": " + strerror(errno));
      }
      kj::AutoCloseFd made(openat(dir.get(), name.c_str(), kFolderOpen));
      if (made.get() >= 0) giveTo(made.get(), uid, gid);
      created.push_back(entry);
      continue;
    }
    const std::string& name = entry;
    int fd = openat(dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST) continue;  // there already
      throw std::runtime_error("create " + base + "/" + rel + "/" + name + ": " + strerror(errno));
    }
    giveTo(fd, uid, gid);
    close(fd);
    created.push_back(name);
  }
  return created;
}

GitFolders findGitFolders(const std::string& root, size_t maxFolders) {
  kj::AutoCloseFd fd(open(root.c_str(), kFolderOpen));
  if (fd.get() < 0) return {};
  return find(fd.get(), maxFolders);
}

Quarantined quarantineNewGitSettings(const std::string& root, const GitFolders& before,
                                     const std::string& stamp, unsigned uid, unsigned gid) {
  Quarantined out;
  kj::AutoCloseFd rootFd(open(root.c_str(), kFolderOpen));
  if (rootFd.get() < 0) return out;
  GitFolders now = find(rootFd.get(), 50000);
  out.complete = now.complete;
  for (const auto& [rel, identity] : now.gitPointers) {
    auto was = before.gitPointers.find(rel);
    if (was != before.gitPointers.end() && was->second == identity) continue;
    const size_t slash = rel.rfind('/');
    kj::AutoCloseFd dir(openBelow(rootFd.get(), slash == std::string::npos ? "" : rel.substr(0, slash)));
    if (dir.get() >= 0 && moveAside(dir.get(), ".git", stamp)) out.folders.push_back(rel);
  }
  for (const auto& rel : now.found) {
    if (before.found.count(rel)) continue;
    const bool commondir = rel == "commondir" || (rel.size() > 10 && rel.compare(rel.size() - 10, 10, "/commondir") == 0);
    std::string folder = commondir ? rel.substr(0, rel.size() >= 10 ? rel.size() - 10 : 0) : rel;
    if (!folder.empty() && folder.back() == '/') folder.pop_back();
    kj::AutoCloseFd git(openBelow(rootFd.get(), folder));
    if (git.get() < 0) continue;
    bool changed = false;
    if (commondir) {
      // A folder that was a repository before the run, now pointed at another one's config.
      changed = moveAside(git.get(), "commondir", stamp);
    } else {
      changed |= moveAside(git.get(), "hooks", stamp);
      if (mkdirat(git.get(), "hooks", 0755) == 0) {
        kj::AutoCloseFd hooks(openat(git.get(), "hooks", kFolderOpen));
        if (hooks.get() >= 0) giveTo(hooks.get(), uid, gid);
      }
      changed |= moveAside(git.get(), "config", stamp);
      int cfg = openat(git.get(), "config", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (cfg >= 0) {
        ssize_t n = write(cfg, kPlainConfig, sizeof kPlainConfig - 1);
        (void)n;
        giveTo(cfg, uid, gid);
        close(cfg);
      }
      moveAside(git.get(), "commondir", stamp);
    }
    if (changed) out.folders.push_back(rel);
  }
  return out;
}

std::vector<std::string> quarantineNewInstructions(const std::string& root, const GitFolders& before,
                                                   const std::string& stamp) {
  std::vector<std::string> moved;
  kj::AutoCloseFd rootFd(open(root.c_str(), kFolderOpen));
  if (rootFd.get() < 0) return moved;  // gone: nothing in it to be read
  GitFolders now = find(rootFd.get(), 50000);
  std::vector<std::string> done;  // moved folders (.pi, .agents): what is below them went too
  for (const auto& rel : now.instructions) {  // sorted: a folder before what is in it
    if (before.instructions.count(rel)) continue;
    const size_t slash = rel.rfind('/');
    const std::string folder = slash == std::string::npos ? "" : rel.substr(0, slash);
    const std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
    // A folder the first walk did not reach (it ran out of budget) may have held it before the run:
    // the owner's file is left alone, and the report says the tree was too large.
    bool inside = false;
    for (const auto& d : done) inside |= rel.rfind(d + "/", 0) == 0;
    if (inside || (!before.complete && !before.visited.count(folder))) continue;
    kj::AutoCloseFd dir(openBelow(rootFd.get(), folder));
    if (dir.get() < 0) continue;
    if (!moveAside(dir.get(), name.c_str(), stamp)) {
      moved.push_back(rel + " (could not be moved aside: " + strerror(errno) + ")");  // the owner is told
      continue;
    }
    moved.push_back(rel);
    done.push_back(rel);
  }
  return moved;
}

TaintedRunTrees::TaintedRunTrees(std::vector<std::string> roots, unsigned uid, unsigned gid)
    : roots_(std::move(roots)), uid_(uid), gid_(gid) {
  for (const auto& root : roots_) before_.push_back(findGitFolders(root));
}

TaintUndo TaintedRunTrees::undo(const std::string& stamp) const {
  TaintUndo out;
  for (size_t i = 0; i < roots_.size(); ++i) {
    Quarantined q = quarantineNewGitSettings(roots_[i], before_[i], stamp, uid_, gid_);
    for (const auto& folder : q.folders) out.gitSettings.push_back(roots_[i] + (folder.empty() ? "" : "/" + folder));
    if (!q.complete || !before_[i].complete)
      out.gitSettings.push_back(roots_[i] + ": too large to look through whole; git settings below it were not all checked");
    for (const auto& rel : quarantineNewInstructions(roots_[i], before_[i], stamp))
      out.instructionFiles.push_back(roots_[i] + "/" + rel);
  }
  return out;
}

}  // namespace pine::sandbox
