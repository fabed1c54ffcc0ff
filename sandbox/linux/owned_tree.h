// Changing owners and modes, as root, in trees that another uid can change while we
// walk them (a worker's workspace, the broker's data/). Every step is descriptor-based:
// a folder is entered with openat(O_NOFOLLOW | O_DIRECTORY) from the folder above it,
// never by a path; a file is changed through a descriptor of the inode that was checked
// (so swapping a name for a symlink or a hard link between the check and the change
// gains nothing); a symlink is never followed or changed; a mount is never crossed; a
// file with more than one link is never changed (it may be a link to a file outside).
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace pine::sandbox {

// What a walk did and left alone, for the log and the tests.
struct TreeChange {
  size_t changed = 0;        // entries whose owner, group or mode changed
  size_t linkedFiles = 0;    // files with more than one link, left alone
  size_t symlinks = 0;       // left alone
  size_t mounts = 0;         // folders on another device, not entered
  size_t vanished = 0;       // names gone or changed between listing and opening
  size_t other = 0;          // sockets, fifos, devices: left alone
};

// What to make of each regular file and folder below (and including) the root.
struct TreeRule {
  uid_t uid = (uid_t)-1;  // -1: leave the owner
  gid_t gid = (gid_t)-1;  // -1: leave the group
  mode_t fileAdd = 0;     // mode bits added to regular files
  mode_t dirAdd = 0;      // mode bits added to folders
};

// Opens the folder `rel` (plain names separated by '/', no "." or "..") below the open
// folder `baseFd`, one name at a time, never following a link and never leaving the
// device of `baseFd`. Returns the descriptor, or -1 with errno (ELOOP for a link, EXDEV
// for a mount, ENOTDIR, ENOENT, EINVAL for a name that is not plain).
int openFolderBelow(int baseFd, const std::string& rel);

// Applies `rule` to the open folder `rootFd` and everything below it (on its device).
// `path` is only for error messages. Throws std::runtime_error with the path when a
// change the kernel refuses fails, or when the tree is deeper than `maxDepth`.
TreeChange applyToTree(int rootFd, const TreeRule& rule, const std::string& path, int maxDepth = 256);

// Applies `rule` to the entry `name` of the open folder `dirFd`: a regular file with one link,
// or a folder (and, with `recursive`, what lies below it); a link, a file with several links,
// a mount or anything else is left alone. A name that is gone counts as vanished.
TreeChange applyToEntry(int dirFd, const std::string& name, const TreeRule& rule, const std::string& path,
                        bool recursive);

// When pined runs as root: hands the folders `rels` (relative to `base`, which only pined
// can change, such as pine's home) to the worker's uid and gid, and makes every folder from
// `base` down to each of them traversable by others (o+x, never o+r). A tree is walked only
// when its top folder is not the worker's yet (just created, or it belonged to another
// uid): not on every spawn, and a file the owner adds later stays the owner's.
TreeChange handOverToWorker(const std::string& base, const std::vector<std::string>& rels, uid_t uid, gid_t gid);

// When pined runs as root: lets others read the trees `rels` below `base` without owning them
// (o+r on files, o+rx on folders, o+x on the folders from `base` down). Links are left alone.
TreeChange shareReadOnlyBelow(const std::string& base, const std::vector<std::string>& rels);

}  // namespace pine::sandbox
