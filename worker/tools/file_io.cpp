// File I/O beneath the jail that the tools share: reading a capped amount,
// telling text from binary, and replacing a file atomically.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "worker/tools/tool_parts.h"
#include "common/random_bytes.h"

namespace pine::tools::detail {
namespace {

std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::string sysError(const std::string& what, const std::string& path, int err) {
  return "could not " + what + " '" + path + "': " + std::strerror(err);
}

std::string randomSuffix() {
  unsigned char raw[6] = {};
  if (!randomBytes(raw, sizeof raw, false)) {
    // Uniqueness only (the open is exclusive): the pid and a counter will do.
    static unsigned counter = 0;
    return std::to_string(getpid()) + "-" + std::to_string(++counter);
  }
  static const char hex[] = "0123456789abcdef";
  std::string s;
  for (unsigned char c : raw) s += {hex[c >> 4], hex[c & 15]};
  return s;
}

// The root an existing folder lies under and its path below it, so the
// protected-name rules can judge a folder about to be created.
std::optional<std::string> mayCreateDir(const PathJail& jail, const std::string& parentShown, const std::string& name,
                                        const std::string& shown) {
  auto real = jail.resolve(parentShown);
  if (!real) return jailMessage(real.error());
  const sandbox::JailRoot* best = nullptr;
  std::string rel;
  for (const auto& root : jail.roots()) {
    const std::string& p = root.path();
    const std::string& r = real.value();
    std::string below;
    if (r == p) below.clear();
    else if (p == "/") below = r.substr(1);
    else if (r.size() > p.size() && r.compare(0, p.size(), p) == 0 && r[p.size()] == '/') below = r.substr(p.size() + 1);
    else continue;
    if (best == nullptr || p.size() > best->path().size()) best = &root, rel = below;
  }
  if (best == nullptr) return withAskHint("refused '" + shown + "': it lies outside the allowed folders");
  if (best->access() != sandbox::RootAccess::ReadWrite)
    return withAskHint("refused '" + shown + "': it would be created in a read-only folder (" + best->path() + ")");
  const std::string relNew = rel.empty() ? name : rel + "/" + name;
  if (const auto* rule = jail.rules().refusing(relNew, true))
    return withAskHint("refused '" + shown + "': '" + rule->pattern + "' is protected: " + rule->reason);
  return std::nullopt;
}

// Creates the folders of `dir` (normalised) that are missing, each one
// beneath a folder the jail has opened and checked.
std::optional<std::string> makeParents(const PathJail& jail, const std::string& dir) {
  const bool absolute = !dir.empty() && dir[0] == '/';
  const auto parts = components(dir);
  auto prefixOf = [&](size_t n) {
    std::string p = absolute ? "/" : "";
    for (size_t k = 0; k < n; ++k) p += (k == 0 ? "" : "/") + parts[k];
    return p.empty() ? std::string(".") : p;
  };
  size_t have = parts.size();
  while (true) {
    auto d = jail.openDir(prefixOf(have));
    if (d) break;
    if (d.error().code != sandbox::JailErrc::NotFound || have == 0) return jailMessage(d.error());
    --have;
  }
  for (size_t k = have; k < parts.size(); ++k) {
    const std::string parent = prefixOf(k), shown = prefixOf(k + 1);
    if (parts[k] == "..") return "refused '" + shown + "': it climbs out of a folder that does not exist";
    if (auto why = mayCreateDir(jail, parent, parts[k], shown)) return why;
    auto pd = jail.openDir(parent);
    if (!pd) return jailMessage(pd.error());
    if (mkdirat(pd.value().get(), parts[k].c_str(), 0755) != 0 && errno != EEXIST)
      return sysError("create the folder", shown, errno);
  }
  return std::nullopt;
}

}  // namespace

std::string lexicalNormal(std::string_view path) {
  const bool absolute = !path.empty() && path[0] == '/';
  std::vector<std::string> out;
  for (auto& c : components(path)) {
    if (c == ".") continue;
    if (c == "..") {
      if (!out.empty() && out.back() != "..") out.pop_back();
      else if (!absolute) out.push_back(c);
      continue;
    }
    out.push_back(c);
  }
  std::string s = absolute ? "/" : "";
  for (size_t k = 0; k < out.size(); ++k) s += (k == 0 ? "" : "/") + out[k];
  return s.empty() ? "." : s;
}

bool readUpTo(int fd, size_t max, std::string* out, bool* cut) {
  out->clear();
  *cut = false;
  char buf[64 * 1024];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) return true;
    if (out->size() + size_t(n) > max) {
      out->append(buf, max - out->size());
      *cut = true;
      return true;
    }
    out->append(buf, size_t(n));
  }
}

bool looksBinary(std::string_view head) { return head.substr(0, 8192).find('\0') != std::string_view::npos; }

std::string cutUtf8(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut));
}

std::optional<std::string> ReplacingFile::open(const PathJail& jail, const std::string& path, bool createParents) {
  abandon();
  path_ = path;
  created_ = false;
  if (path.empty() || path.back() == '/') return "refused '" + path + "': it names a folder; give a file name";
  // The jail judges the path as asked first (names, roots, links), before anything is made.
  auto target = jail.openForWrite(path, {.create = false, .truncate = false});
  const std::string norm = lexicalNormal(path);
  const size_t slash = norm.rfind('/');
  name_ = slash == std::string::npos ? norm : norm.substr(slash + 1);
  const std::string parent = slash == std::string::npos ? "." : (slash == 0 ? "/" : norm.substr(0, slash));
  if (name_ == "." || name_ == ".." || name_.empty()) return "refused '" + path + "': it names a folder; give a file name";
  if (!target) {
    if (target.error().code != sandbox::JailErrc::NotFound) return jailMessage(target.error());
    if (createParents)
      if (auto why = makeParents(jail, parent)) return why;
    // Made empty here so the jail checks the final entry like any write.
    target = jail.openForWrite(norm, {.create = true, .truncate = false, .exclusive = true});
    if (!target) return jailMessage(target.error());
    created_ = true;
  }
  if (fstat(target.value().get(), &target_) != 0) return sysError("inspect", path, errno);
  auto dir = jail.openDir(parent);
  if (!dir) {
    created_ = false;  // not removable without the folder; it stays, empty
    return jailMessage(dir.error());
  }
  dir_ = std::move(dir.value());
  // The folder opened must be the one holding the file that was checked.
  struct stat est;
  if (fstatat(dir_.get(), name_.c_str(), &est, AT_SYMLINK_NOFOLLOW) != 0 || est.st_dev != target_.st_dev ||
      est.st_ino != target_.st_ino) {
    created_ = false;
    dir_ = {};
    return "refused '" + path + "': it changed while being written; try again";
  }
  tmpName_ = "." + cutUtf8(name_, 180) + ".pine-" + randomSuffix() + ".tmp";
  const std::string tmpShown = (parent == "/" ? "" : parent) + "/" + tmpName_;
  const mode_t mode = target_.st_mode & 07777;
  auto tmp = jail.openForWrite(parent == "." ? tmpName_ : tmpShown,
                               {.create = true, .truncate = false, .exclusive = true, .mode = mode});
  if (!tmp) {
    tmpName_.clear();
    abandon();
    return jailMessage(tmp.error());
  }
  tmp_ = std::move(tmp.value());
  if (fchmod(tmp_.get(), mode) != 0) {
    abandon();
    return sysError("set the mode of", path, errno);
  }
  return std::nullopt;
}

std::optional<std::string> ReplacingFile::append(std::string_view content) {
  for (size_t off = 0; off < content.size();) {
    ssize_t n = ::write(tmp_.get(), content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return sysError("write", path_, n < 0 ? errno : EIO);
    off += size_t(n);
  }
  return std::nullopt;
}

std::optional<std::string> ReplacingFile::commit() {
  std::optional<std::string> err;
  if (fsync(tmp_.get()) != 0) err = sysError("flush", path_, errno);
  // rename replaces the entry itself: a link planted meanwhile is replaced, never followed.
  if (!err && renameat(dir_.get(), tmpName_.c_str(), dir_.get(), name_.c_str()) != 0)
    err = sysError("replace", path_, errno);
  if (err) {
    abandon();
    return err;
  }
  fsync(dir_.get());
  tmpName_.clear();
  created_ = false;
  tmp_ = {};
  dir_ = {};
  return std::nullopt;
}

void ReplacingFile::abandon() {
  if (dir_.get() < 0) return;
  const int dfd = dir_.get();
  if (!tmpName_.empty()) unlinkat(dfd, tmpName_.c_str(), 0);
  struct stat now;
  if (created_ && fstatat(dfd, name_.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == target_.st_dev &&
      now.st_ino == target_.st_ino)
    unlinkat(dfd, name_.c_str(), 0);
  tmpName_.clear();
  created_ = false;
  tmp_ = {};
  dir_ = {};
}

std::optional<std::string> writeFileAtomic(const PathJail& jail, const std::string& path, std::string_view content,
                                           bool createParents, bool* created) {
  ReplacingFile file;
  if (auto err = file.open(jail, path, createParents)) return err;
  *created = file.created();
  if (auto err = file.append(content)) return err;
  return file.commit();
}

}  // namespace pine::tools::detail
