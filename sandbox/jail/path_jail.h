// The path jail of the worker's file tools (read, write, edit, grep, find,
// ls): every path is opened beneath one of a few root directories, never
// outside them, never through a magic link, and never onto a protected name.
// Linux: openat2() with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS. Elsewhere
// (or where openat2 is missing): realpath(), O_NOFOLLOW, then a check that
// the descriptor opened is the file that was checked (its path as the kernel
// reports it, and its device and inode). A second layer: the OS sandbox is
// the boundary.
#pragma once
#include <sys/stat.h>
#include <sys/types.h>

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "sandbox/jail/name_rules.h"

namespace pine::sandbox {

enum class JailErrc {
  InvalidPath,   // missing, empty, not a string, NUL byte, not UTF-8, too long
  OutsideRoots,  // not beneath any root, or resolves outside (.., symlink)
  Symlink,       // a symbolic link where none may be (write target, magic link)
  Protected,     // a protected-name rule refuses this access
  ReadOnly,      // a write beneath a read-only root
  NotFound,
  Exists,        // exclusive create of an existing entry
  WrongType,     // not a regular file (read/write) or not a directory (openDir)
  HardLinked,    // write to a file with more than one link
  Raced,         // what was opened is not what was checked: changed meanwhile
  System,        // any other refusal by the operating system (errno kept)
};
const char* jailErrcName(JailErrc code);

struct JailError {
  JailErrc code;
  std::string message;  // what was refused and why, for the agent
  int sysErrno = 0;
};

// An owned file descriptor; closed on destruction.
class JailFd {
 public:
  JailFd() = default;
  explicit JailFd(int fd) : fd_(fd) {}
  JailFd(JailFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  JailFd& operator=(JailFd&& o) noexcept;
  JailFd(const JailFd&) = delete;
  JailFd& operator=(const JailFd&) = delete;
  ~JailFd();
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

template <class T>
class JailResult {
 public:
  JailResult(T value) : v_(std::move(value)) {}
  JailResult(JailError error) : v_(std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  const JailError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, JailError> v_;
};

enum class RootAccess { ReadOnly, ReadWrite };

class JailRoot {
 public:
  // realpath()s `path` and opens it O_PATH | O_DIRECTORY.
  static JailResult<JailRoot> open(const std::string& path, RootAccess access);
  // Takes a directory descriptor opened elsewhere; `canonicalPath` must name
  // the same directory (device and inode are compared).
  static JailResult<JailRoot> adopt(JailFd dirFd, const std::string& canonicalPath, RootAccess access);

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }
  RootAccess access() const { return access_; }

 private:
  JailRoot(JailFd fd, std::string path, RootAccess access) : fd_(std::move(fd)), path_(std::move(path)), access_(access) {}
  JailFd fd_;
  std::string path_;
  RootAccess access_;
};

struct WriteFlags {
  bool create = true;      // create when missing
  bool truncate = true;    // empty it (done after the checks, never before)
  bool exclusive = false;  // fail with Exists when it is there
  bool append = false;
  mode_t mode = 0644;      // for a new file, before the umask
};

struct JailOptions {
  // A file with several links may share its data with a name outside the
  // jail; writing it is refused unless this is set.
  bool allowHardLinkedWrites = false;
  // Use the realpath fallback even where openat2 works (tests, comparisons).
  bool forceFallback = false;
};

class PathJail {
 public:
  // roots[0] is the workspace: relative paths resolve against it. Absolute
  // paths must lie beneath some root (their canonical form: /tmp is not
  // /private/tmp on a Mac). Where roots nest, the innermost decides access.
  PathJail(std::vector<JailRoot> roots, NameRules rules, JailOptions options = {});

  // A regular file, read only. Symbolic links are followed while they stay
  // beneath a root. FIFOs, sockets and devices are refused (WrongType)
  // without blocking.
  JailResult<JailFd> openForRead(std::string_view path) const;
  // A regular file for writing. The last component must not be a symbolic
  // link; parent directories may be links that stay beneath a root.
  JailResult<JailFd> openForWrite(std::string_view path, WriteFlags flags = {}) const;
  // A directory, read only (for fdopendir).
  JailResult<JailFd> openDir(std::string_view path) const;
  // stat follows symbolic links beneath a root; lstat describes the entry itself.
  JailResult<struct stat> stat(std::string_view path) const;
  JailResult<struct stat> lstat(std::string_view path) const;
  // The canonical path an existing entry resolves to (following links
  // beneath a root); for messages and display.
  JailResult<std::string> resolve(std::string_view path) const;

  bool usesOpenat2() const { return openat2_; }
  const std::vector<JailRoot>& roots() const { return roots_; }
  const NameRules& rules() const { return rules_; }

 private:
  enum class Op { Read, Write, Dir, Stat, Lstat, Resolve };
  struct Located;
  struct Opened;
  JailResult<Located> locate(std::string_view path) const;
  JailResult<Opened> open(std::string_view path, Op op, const WriteFlags& flags) const;
  JailResult<Opened> openBeneath(const Located& loc, Op op, const WriteFlags& flags) const;
  JailResult<Opened> openFallback(const Located& loc, Op op, const WriteFlags& flags) const;
  JailResult<Opened> openFinal(int parentFd, const std::string& parentReal, const std::string& name,
                               const std::string& shown, Op op, const WriteFlags& flags, bool beneath) const;
  JailResult<Opened> check(JailFd fd, const std::string& shown, Op op, const std::string& expectedReal) const;
  // Innermost root containing `real` (canonical), with the path below it.
  const JailRoot* rootOf(const std::string& real, std::string* rel) const;

  std::vector<JailRoot> roots_;
  NameRules rules_;
  JailOptions options_;
  bool openat2_ = false;
};

// The "path" argument of a file tool call: refuses (InvalidPath) a missing
// key, a non-object `args`, a value that is not a string, an empty string
// and a NUL byte. Returns the path.
JailResult<std::string> validatePathArgument(const nlohmann::json& args, std::string_view key = "path");

}  // namespace pine::sandbox
