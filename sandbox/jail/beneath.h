// What the path jail asks of the kernel that differs by platform: one file each, chosen in
// sandbox/jail/meson.build. Linux opens beneath a folder in one call (openat2 with
// RESOLVE_BENEATH) and names an open file through /proc/self/fd; macOS has no such open (the
// jail's checked fallback does the work: available() is false) and names a file with F_GETPATH.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>

namespace pine::sandbox::beneath {

// Open flags for a descriptor that only names a file (Linux O_PATH; elsewhere O_RDONLY, since a
// read-only open of a folder is harmless).
int pathOnly();

// Whether an open beneath `rootFd` works here (old kernels answer ENOSYS, a seccomp filter EPERM).
bool available(int rootFd);

// openat(2) of `path` below `dirfd` that never leaves it and follows no magic link (nor any link
// with `noLinks`): the descriptor, or -1 with errno (ENOSYS where the platform has none).
long open(int dirfd, const std::string& path, int flags, mode_t mode, bool noLinks);

// Where the kernel says a descriptor points now; nullopt when it cannot tell, or the file has
// no name any more.
std::optional<std::string> fdPath(int fd);

}  // namespace pine::sandbox::beneath
