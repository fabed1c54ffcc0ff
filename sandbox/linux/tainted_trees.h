// What a tainted session must not leave behind to make an injection permanent, where
// the Linux sandbox cannot refuse it by itself: Landlock and bind mounts guard paths
// that exist when the run starts. So, before the run, pined creates the instruction
// files that are missing (empty), and the read-only binds hold for them too; and
// after the run (the worker is gone by then) it moves aside the hooks and config of
// every repository the run created (`git init`, a clone, a `.git` file pointing
// elsewhere), which the owner's own git would otherwise obey later.
//
// A git folder is recognised by what git needs in it (HEAD, and objects and refs or a
// commondir, of any kind: git follows links there), not by its name: `.git`, a bare repository, `--separate-git-dir`, submodules' folders
// under `.git/modules` and worktrees' are all found. Walks are descriptor-based
// (owned_tree.h): no link is followed and no mount crossed.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sandbox/sandbox_host.h"

namespace pine::sandbox {

// Creates each of `names` that does not exist in the folder `base`/`rel` (reached without
// following a link) as an empty file, mode 644, or, for a name ending in '/', an empty folder,
// mode 700; owned by `uid`/`gid` unless those are -1. Returns the names created. Throws with
// the path when the folder cannot be opened or a name cannot be created.
std::vector<std::string> createMissingFiles(const std::string& base, const std::string& rel,
                                            const std::vector<std::string>& names, unsigned uid, unsigned gid);

// The git folders below `root` (paths relative to it, "" for the root itself). Stops
// after `maxFolders` folders (the caller treats a partial answer as it must).
struct GitFolders {
  std::set<std::string> found;
  // Every instruction name (policy.h instructionNames) in the folders walked, and those folders.
  std::set<std::string> instructions, visited;
  // Every `.git` that is not a folder (a "gitdir:" file or a link), as "<folder>/.git", with its
  // inode, size and change time.
  std::map<std::string, std::string> gitPointers;
  bool complete = true;
};
GitFolders findGitFolders(const std::string& root, size_t maxFolders = 50000);

// After a tainted run: each git folder below `root` that is not in `before` gets its
// `hooks` and `config` renamed to `hooks.tainted-<stamp>` and `config.tainted-<stamp>`
// (kept for the owner to read; git reads neither name), a fresh empty `hooks` folder and
// a config with only what `git init` writes; each new `.git` file or link is renamed
// `.git.tainted-<stamp>` (what it points at may be outside the trees looked through). Files
// are created owned by `uid`/`gid` when those are not -1. Returns what was changed, relative
// to `root`.
struct Quarantined {
  std::vector<std::string> folders;
  bool complete = true;  // false: the tree was larger than the walk's budget
};
Quarantined quarantineNewGitSettings(const std::string& root, const GitFolders& before,
                                     const std::string& stamp, unsigned uid, unsigned gid);

// After a tainted run: each instruction file or folder below `root` (AGENTS.md, .pi/, ...) that
// is there now and was not in `before` (a file, folder or link, not followed) is renamed
// `<name>.tainted-<stamp>`. The kernel guards only instruction files that exist when the run
// starts, and pined creates the missing ones only at the workspace's top; any folder of a
// writable tree may be opened for a conversation later (`pinectl folder`), whose prompt then
// reads its AGENTS.md. Returns the paths moved (one that could not be, with why).
std::vector<std::string> quarantineNewInstructions(const std::string& root, const GitFolders& before,
                                                   const std::string& stamp);

// The writable trees of one tainted run, looked at when it starts; `undo()` once it has
// ended quarantines what it added (above) in each and says what: one "<tree>/<folder>" a
// line for git settings (and a line for a tree too large to look through whole), one
// "<tree>/<name>" for an instruction file.
class TaintedRunTrees {
 public:
  TaintedRunTrees(std::vector<std::string> roots, unsigned uid, unsigned gid);
  TaintUndo undo(const std::string& stamp) const;

 private:
  std::vector<std::string> roots_;
  std::vector<GitFolders> before_;
  unsigned uid_, gid_;
};

}  // namespace pine::sandbox
