// Namespaces and mounts of the Linux backend: the parts that need privilege
// (real root, or the capabilities a fresh user namespace gives) and so run
// first in the child, before the credentials are dropped.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "sandbox/policy.h"

namespace pine::sandbox::ns {

struct Bind {
  std::string path;
  bool readOnly;  // false: a plain bind onto itself, which pins the folder (see below)
  std::string source = {};  // set: this (an empty mode-000 file or folder) is bound over `path` to hide it
};

// Read-only bind mounts for every existing denyWrite path inside a writable
// root (.git/hooks, .git/config, instruction files), which Landlock cannot
// carve out of a writable tree without taking rights from its neighbours.
// Every folder between the writable root and such a path is bound onto itself
// first: a mount point cannot be renamed or removed (EBUSY), so a worker
// cannot move `.git` (or a folder holding it) aside and put another in its
// place. Sorted parents first. A missing `<gitdir>/hooks` is created (mode
// 755, owned by `owner` when that is not -1) so that it can be guarded; other
// missing paths are returned in `unguarded`, unless another denyWrite path holds
// them (an untrusted run's whole workspace): then nothing can make them either.
std::vector<Bind> computeBinds(const Policy& policy, uid_t owner, gid_t group, std::vector<std::string>& guarded,
                               std::vector<std::string>& unguarded);

// Makes the masks computeMasks binds over denied paths (LinuxOptions::maskDir, maskFile), or
// checks the ones there: an empty folder and an empty file, mode 000, pined's. A sandboxed
// process cannot open them, and their binds are read-only, so nothing is put in them.
void ensureMasks(const std::string& dir, const std::string& file);

// Read-only binds of an empty, mode-000 folder or file (`maskDir`, `maskFile`) over every existing
// denyRead path inside a readable or writable root, so that Landlock can allow the root whole
// instead of one rule for every neighbour on the way down (/etc: some 200). Returned in `hidden`.
std::vector<Bind> computeMasks(const Policy& policy, const std::string& maskDir, const std::string& maskFile,
                               std::vector<std::string>& hidden);

// --- in the child; async-signal-safe, allocation-free, 0 or errno ---

// After unshare(CLONE_NEWUSER): map our own uid and gid onto themselves.
// `uidMap`/`gidMap` are the prepared "uid uid 1\n" lines.
int writeIdMaps(const char* uidMap, const char* gidMap) noexcept;

// Mount propagation to private (nothing leaks back to the host), the binds, and
// a fresh /proc when we are in a new pid namespace.
int applyMounts(const std::vector<Bind>& binds, bool mountProc) noexcept;

// Brings up "lo" in a new network namespace (network localhost).
int loopbackUp() noexcept;

}  // namespace pine::sandbox::ns
