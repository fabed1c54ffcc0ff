#include "sandbox/jail/path_jail.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "sandbox/jail/beneath.h"

namespace pine::sandbox {
namespace {

using beneath::fdPath;
const int kPathOnly = beneath::pathOnly();

JailError fail(JailErrc code, std::string_view shown, const std::string& why, int err = 0) {
  std::string msg = "refused '" + std::string(shown) + "': " + why;
  if (err != 0) msg += " (" + std::string(std::strerror(err)) + ")";
  return JailError{code, std::move(msg), err};
}

// beneath::fdPath, where the kernel says a descriptor points now, is what makes the fallback
// safe: a path swapped for a symlink between check and open shows up there as a different path.

std::optional<std::string> realPath(const std::string& path, int* err) {
  char* r = ::realpath(path.c_str(), nullptr);
  if (r == nullptr) {
    *err = errno;
    return std::nullopt;
  }
  std::string out(r);
  std::free(r);
  return out;
}

bool sameFile(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

std::string joinPath(const std::string& dir, const std::string& name) {
  if (name.empty()) return dir;
  return dir == "/" ? "/" + name : dir + "/" + name;
}

JailError openError(int err, std::string_view shown, bool write) {
  switch (err) {
    case ENOENT: return fail(JailErrc::NotFound, shown, "no such file or folder");
    case EXDEV: return fail(JailErrc::OutsideRoots, shown, "it resolves outside the allowed folders", err);
    case ELOOP:
      return fail(JailErrc::Symlink, shown,
                  write ? "it is a symbolic link; write to the file it points to"
                        : "it goes through a magic link or too many symbolic links",
                  err);
    case ENOTDIR: return fail(JailErrc::WrongType, shown, "a part of the path is not a folder", err);
    case EISDIR: return fail(JailErrc::WrongType, shown, "it is a folder", err);
    case EEXIST: return fail(JailErrc::Exists, shown, "it already exists");
    case ENXIO: return fail(JailErrc::WrongType, shown, "it is not a regular file", err);
    case ENAMETOOLONG: return fail(JailErrc::InvalidPath, shown, "the path is too long", err);
    default: return fail(JailErrc::System, shown, "the operating system refused it", err);
  }
}

}  // namespace

const char* jailErrcName(JailErrc code) {
  switch (code) {
    case JailErrc::InvalidPath: return "invalid-path";
    case JailErrc::OutsideRoots: return "outside-roots";
    case JailErrc::Symlink: return "symlink";
    case JailErrc::Protected: return "protected";
    case JailErrc::ReadOnly: return "read-only";
    case JailErrc::NotFound: return "not-found";
    case JailErrc::Exists: return "exists";
    case JailErrc::WrongType: return "wrong-type";
    case JailErrc::HardLinked: return "hard-linked";
    case JailErrc::Raced: return "raced";
    case JailErrc::System: return "system";
  }
  return "unknown";
}

JailFd& JailFd::operator=(JailFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

JailFd::~JailFd() {
  if (fd_ >= 0) ::close(fd_);
}

JailResult<JailRoot> JailRoot::open(const std::string& path, RootAccess access) {
  int err = 0;
  auto real = realPath(path, &err);
  if (!real) return fail(JailErrc::NotFound, path, "the root folder cannot be resolved", err);
  int fd = ::open(real->c_str(), kPathOnly | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail(JailErrc::System, path, "the root folder cannot be opened", errno);
  return JailRoot(JailFd(fd), *real, access);
}

JailResult<JailRoot> JailRoot::adopt(JailFd dirFd, const std::string& canonicalPath, RootAccess access) {
  struct stat a, b;
  int err = 0;
  auto real = realPath(canonicalPath, &err);
  if (!real || *real != canonicalPath)
    return fail(JailErrc::InvalidPath, canonicalPath, "a root path must be canonical (realpath)", err);
  if (fstat(dirFd.get(), &a) != 0 || !S_ISDIR(a.st_mode))
    return fail(JailErrc::WrongType, canonicalPath, "the root descriptor is not a folder", errno);
  if (::stat(canonicalPath.c_str(), &b) != 0 || !sameFile(a, b))
    return fail(JailErrc::Raced, canonicalPath, "the root descriptor and path name different folders");
  return JailRoot(std::move(dirFd), canonicalPath, access);
}

struct PathJail::Located {
  const JailRoot* root;
  std::string rel;  // below the root; "" is the root itself
  std::string shown;
  bool trailingSlash;
};

struct PathJail::Opened {
  JailFd fd;  // invalid for lstat, which needs none
  std::string real;
  struct stat st;
};

PathJail::PathJail(std::vector<JailRoot> roots, NameRules rules, JailOptions options)
    : roots_(std::move(roots)), rules_(std::move(rules)), options_(options) {
  if (roots_.empty()) throw std::invalid_argument("a path jail needs at least one root");
  // Probe once: old kernels answer ENOSYS, a seccomp filter may answer EPERM, macOS has none.
  if (beneath::available(roots_[0].fd())) openat2_ = !options_.forceFallback;
}

const JailRoot* PathJail::rootOf(const std::string& real, std::string* rel) const {
  const JailRoot* best = nullptr;
  for (const auto& r : roots_) {
    const std::string& p = r.path();
    std::string below;
    if (p == "/") {
      below = real.substr(1);
    } else if (real == p) {
      below.clear();
    } else if (real.size() > p.size() && real.compare(0, p.size(), p) == 0 && real[p.size()] == '/') {
      below = real.substr(p.size() + 1);
    } else {
      continue;
    }
    if (best == nullptr || p.size() > best->path().size()) {
      best = &r;
      *rel = below;
    }
  }
  return best;
}

JailResult<PathJail::Located> PathJail::locate(std::string_view path) const {
  if (path.empty()) return fail(JailErrc::InvalidPath, path, "the path is empty");
  if (path.find('\0') != std::string_view::npos) return fail(JailErrc::InvalidPath, "", "the path contains a NUL byte");
  if (path.size() >= PATH_MAX) return fail(JailErrc::InvalidPath, path.substr(0, 64), "the path is too long");
  if (!isValidUtf8Path(path)) return fail(JailErrc::InvalidPath, path, "the path is not valid UTF-8");

  // ".." is resolved here, on the text, so the kernel never walks up: a path
  // either names something below a root or is refused.
  std::string abs = path.front() == '/' ? std::string(path) : roots_[0].path() + "/" + std::string(path);
  std::vector<std::string_view> parts;
  std::string_view rest = abs;
  while (!rest.empty()) {
    size_t j = rest.find('/');
    auto part = rest.substr(0, j);
    rest = j == std::string_view::npos ? std::string_view() : rest.substr(j + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string normal;
  for (auto p : parts) normal += "/" + std::string(p);
  if (normal.empty()) normal = "/";

  std::string rel;
  const JailRoot* root = rootOf(normal, &rel);
  if (root == nullptr)
    return fail(JailErrc::OutsideRoots, path,
                "it is outside the folders this tool may use (the workspace is " + roots_[0].path() + ")");
  return Located{root, rel, std::string(path), path.back() == '/'};
}

JailResult<PathJail::Opened> PathJail::open(std::string_view path, Op op, const WriteFlags& flags) const {
  auto loc = locate(path);
  if (!loc) return loc.error();
  const auto& l = loc.value();
  const bool write = op == Op::Write;
  if (write && l.root->access() != RootAccess::ReadWrite)
    return fail(JailErrc::ReadOnly, l.shown, "it is in a read-only folder (" + l.root->path() + ")");
  if (write && (l.rel.empty() || l.trailingSlash))
    return fail(JailErrc::WrongType, l.shown, "it names a folder, not a file");
  // The name as asked for, before anything is touched; check() repeats this
  // on the path actually opened (a link can lead onto a protected name).
  if (const NameRule* r = rules_.refusing(l.rel, write))
    return fail(JailErrc::Protected, l.shown, "'" + r->pattern + "' is protected: " + r->reason);

  if (openat2_) {
    auto r = openBeneath(l, op, flags);
    // An absolute symlink that stays inside is refused by RESOLVE_BENEATH
    // (EXDEV); the fallback follows it and still refuses whatever leaves.
    if (r.ok() || r.error().sysErrno != EXDEV) return r;
  }
  return openFallback(l, op, flags);
}

JailResult<PathJail::Opened> PathJail::openBeneath(const Located& l, Op op, const WriteFlags& flags) const {
  const bool needsParent = op == Op::Write || (op == Op::Lstat && !l.rel.empty());
  if (!needsParent) {
    int oflags = O_CLOEXEC;
    if (op == Op::Read) oflags |= O_RDONLY | O_NONBLOCK | O_NOCTTY;
    else if (op == Op::Dir) oflags |= O_RDONLY | O_DIRECTORY;
    else oflags |= kPathOnly;
    long fd = beneath::open(l.root->fd(), l.rel.empty() ? "." : l.rel, oflags, 0, false);
    if (fd < 0) return openError(errno, l.shown, false);
    return check(JailFd(int(fd)), l.shown, op, "");
  }
  size_t slash = l.rel.rfind('/');
  std::string parentRel = slash == std::string::npos ? "." : l.rel.substr(0, slash);
  std::string name = slash == std::string::npos ? l.rel : l.rel.substr(slash + 1);
  long pfd = beneath::open(l.root->fd(), parentRel, kPathOnly | O_DIRECTORY | O_CLOEXEC, 0, false);
  if (pfd < 0) return openError(errno, l.shown, false);
  JailFd parent{int(pfd)};
  auto parentReal = fdPath(parent.get());
  if (!parentReal) return fail(JailErrc::System, l.shown, "cannot tell where its folder is (is /proc mounted?)");
  return openFinal(parent.get(), *parentReal, name, l.shown, op, flags, true);
}

JailResult<PathJail::Opened> PathJail::openFallback(const Located& l, Op op, const WriteFlags& flags) const {
  const std::string full = joinPath(l.root->path(), l.rel);
  const bool needsParent = op == Op::Write || (op == Op::Lstat && !l.rel.empty());
  int err = 0;
  if (!needsParent) {
    auto real = realPath(full, &err);
    if (!real) return openError(err, l.shown, false);
    std::string rel;
    if (rootOf(*real, &rel) == nullptr)
      return fail(JailErrc::OutsideRoots, l.shown, "it resolves outside the allowed folders");
    if (const NameRule* r = rules_.refusing(rel, false))
      return fail(JailErrc::Protected, l.shown, "it leads to '" + r->pattern + "', which is protected: " + r->reason);
    int oflags = O_CLOEXEC | O_NOFOLLOW;
    if (op == Op::Read) oflags |= O_RDONLY | O_NONBLOCK | O_NOCTTY;
    else if (op == Op::Dir) oflags |= O_RDONLY | O_DIRECTORY;
    else oflags |= kPathOnly | O_NONBLOCK;
    int fd = ::open(real->c_str(), oflags);
    if (fd < 0) {
      if (errno == ELOOP) return fail(JailErrc::Raced, l.shown, "it changed into a symbolic link while being opened");
      return openError(errno, l.shown, false);
    }
    return check(JailFd(fd), l.shown, op, *real);
  }
  size_t slash = l.rel.rfind('/');
  std::string parentRel = slash == std::string::npos ? "" : l.rel.substr(0, slash);
  std::string name = slash == std::string::npos ? l.rel : l.rel.substr(slash + 1);
  auto parentReal = realPath(joinPath(l.root->path(), parentRel), &err);
  if (!parentReal) return openError(err, l.shown, false);
  std::string rel;
  if (rootOf(*parentReal, &rel) == nullptr)
    return fail(JailErrc::OutsideRoots, l.shown, "its folder resolves outside the allowed folders");
  int pfd = ::open(parentReal->c_str(), kPathOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (pfd < 0) {
    if (errno == ELOOP) return fail(JailErrc::Raced, l.shown, "its folder changed into a symbolic link");
    return openError(errno, l.shown, false);
  }
  JailFd parent(pfd);
  // The folder opened must be the folder checked: same path now, same inode.
  struct stat opened, named;
  auto now = fdPath(pfd);
  if (!now || *now != *parentReal || fstat(pfd, &opened) != 0 || ::stat(parentReal->c_str(), &named) != 0 ||
      !sameFile(opened, named))
    return fail(JailErrc::Raced, l.shown, "its folder changed while being opened");
  return openFinal(pfd, *parentReal, name, l.shown, op, flags, false);
}

JailResult<PathJail::Opened> PathJail::openFinal(int parentFd, const std::string& parentReal,
                                                 const std::string& name, const std::string& shown, Op op,
                                                 const WriteFlags& flags, bool useBeneath) const {
  const std::string real = joinPath(parentReal, name);
  std::string rel;
  const JailRoot* root = rootOf(real, &rel);
  if (root == nullptr) return fail(JailErrc::OutsideRoots, shown, "its folder resolves outside the allowed folders");
  const bool write = op == Op::Write;
  if (write && root->access() != RootAccess::ReadWrite)
    return fail(JailErrc::ReadOnly, shown, "it leads into a read-only folder (" + root->path() + ")");
  if (const NameRule* r = rules_.refusing(rel, write))
    return fail(JailErrc::Protected, shown, "it leads to '" + r->pattern + "', which is protected: " + r->reason);

  if (op == Op::Lstat) {
    Opened out{JailFd(), real, {}};
    if (fstatat(parentFd, name.c_str(), &out.st, AT_SYMLINK_NOFOLLOW) != 0) return openError(errno, shown, false);
    return out;
  }
  // O_NONBLOCK: a FIFO must not hang the worker; cleared again in check().
  // No O_TRUNC: nothing is emptied before the checks pass.
  int oflags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  if (flags.create) oflags |= O_CREAT;
  if (flags.exclusive) oflags |= O_CREAT | O_EXCL;
  if (flags.append) oflags |= O_APPEND;
  long fd;
  if (useBeneath)
    fd = beneath::open(parentFd, name, oflags, flags.mode, true);
  else
    fd = ::openat(parentFd, name.c_str(), oflags, flags.mode);
  if (fd < 0) return openError(errno, shown, true);
  return check(JailFd(int(fd)), shown, op, real);
}

JailResult<PathJail::Opened> PathJail::check(JailFd fd, const std::string& shown, Op op,
                                             const std::string& expectedReal) const {
  Opened out{std::move(fd), "", {}};
  if (fstat(out.fd.get(), &out.st) != 0) return openError(errno, shown, false);
  auto real = fdPath(out.fd.get());
  if (!real) return fail(JailErrc::Raced, shown, "cannot tell which file was opened (it was removed, or /proc is missing)");
  if (!expectedReal.empty() && *real != expectedReal)
    return fail(JailErrc::Raced, shown, "it changed while being opened");
  // dev+inode of what was opened against what the path names now.
  struct stat named;
  if (::stat(real->c_str(), &named) != 0 || !sameFile(out.st, named))
    return fail(JailErrc::Raced, shown, "it changed while being opened");
  std::string rel;
  const JailRoot* root = rootOf(*real, &rel);
  if (root == nullptr) return fail(JailErrc::OutsideRoots, shown, "it resolves outside the allowed folders");
  const bool write = op == Op::Write;
  if (write && root->access() != RootAccess::ReadWrite)
    return fail(JailErrc::ReadOnly, shown, "it leads into a read-only folder (" + root->path() + ")");
  if (const NameRule* r = rules_.refusing(rel, write))
    return fail(JailErrc::Protected, shown, "it leads to '" + r->pattern + "', which is protected: " + r->reason);
  if (const NameRule* r = rules_.refusing(rel, false))
    return fail(JailErrc::Protected, shown, "it leads to '" + r->pattern + "', which is protected: " + r->reason);

  const int fdn = out.fd.get();
  switch (op) {
    case Op::Read:
      if (S_ISDIR(out.st.st_mode)) return fail(JailErrc::WrongType, shown, "it is a folder");
      if (!S_ISREG(out.st.st_mode)) return fail(JailErrc::WrongType, shown, "it is not a regular file");
      break;
    case Op::Dir:
      if (!S_ISDIR(out.st.st_mode)) return fail(JailErrc::WrongType, shown, "it is not a folder");
      break;
    case Op::Write:
      if (!S_ISREG(out.st.st_mode)) return fail(JailErrc::WrongType, shown, "it is not a regular file");
      if (out.st.st_nlink > 1 && !options_.allowHardLinkedWrites)
        return fail(JailErrc::HardLinked, shown,
                    "it has " + std::to_string(out.st.st_nlink) +
                        " hard links; another name, possibly outside, shares its data");
      break;
    default:
      break;
  }
  if (op == Op::Read || op == Op::Write) {
    int fl = fcntl(fdn, F_GETFL);
    if (fl < 0 || fcntl(fdn, F_SETFL, fl & ~O_NONBLOCK) != 0) return openError(errno, shown, false);
  }
  out.real = *real;
  return out;
}

JailResult<JailFd> PathJail::openForRead(std::string_view path) const {
  auto r = open(path, Op::Read, {});
  if (!r) return r.error();
  return std::move(r.value().fd);
}

JailResult<JailFd> PathJail::openForWrite(std::string_view path, WriteFlags flags) const {
  auto r = open(path, Op::Write, flags);
  if (!r) return r.error();
  // Emptied only now, once it is known to be a single-link regular file
  // inside the jail; append keeps the content.
  if (flags.truncate && !flags.append && ftruncate(r.value().fd.get(), 0) != 0)
    return fail(JailErrc::System, path, "it could not be emptied", errno);
  return std::move(r.value().fd);
}

JailResult<JailFd> PathJail::openDir(std::string_view path) const {
  auto r = open(path, Op::Dir, {});
  if (!r) return r.error();
  return std::move(r.value().fd);
}

JailResult<struct stat> PathJail::stat(std::string_view path) const {
  auto r = open(path, Op::Stat, {});
  if (!r) return r.error();
  return r.value().st;
}

JailResult<struct stat> PathJail::lstat(std::string_view path) const {
  auto r = open(path, Op::Lstat, {});
  if (!r) return r.error();
  return r.value().st;
}

JailResult<std::string> PathJail::resolve(std::string_view path) const {
  auto r = open(path, Op::Resolve, {});
  if (!r) return r.error();
  return std::move(r.value().real);
}

JailResult<std::string> validatePathArgument(const nlohmann::json& args, std::string_view key) {
  const std::string k(key);
  if (!args.is_object()) return fail(JailErrc::InvalidPath, k, "the tool arguments are not an object");
  auto it = args.find(k);
  if (it == args.end()) return fail(JailErrc::InvalidPath, k, "the path argument is missing");
  if (!it->is_string())
    return fail(JailErrc::InvalidPath, k, std::string("the path argument is not a string but ") + it->type_name());
  const auto& s = it->get_ref<const std::string&>();
  if (s.empty()) return fail(JailErrc::InvalidPath, k, "the path argument is empty");
  if (s.find('\0') != std::string::npos) return fail(JailErrc::InvalidPath, k, "the path argument contains a NUL byte");
  return s;
}

}  // namespace pine::sandbox
