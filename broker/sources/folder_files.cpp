#include "broker/sources/folder_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>

namespace pine::sources {
namespace {

FileFacts factsFrom(const struct stat& st) {
  FileFacts f;
  f.exists = true;
  // A file with another name elsewhere (a hard link) may be any file of the same owner, pine's
  // .env included: the sandbox grants the folder's names, not the files behind them. Not read.
  f.regular = S_ISREG(st.st_mode) && st.st_nlink == 1;
  f.dir = S_ISDIR(st.st_mode);
  f.size = (uint64_t)st.st_size;
#ifdef __APPLE__
  f.mtimeNs = (int64_t)st.st_mtimespec.tv_sec * 1000000000 + st.st_mtimespec.tv_nsec;
  f.ctimeNs = (int64_t)st.st_ctimespec.tv_sec * 1000000000 + st.st_ctimespec.tv_nsec;
#else
  f.mtimeNs = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  f.ctimeNs = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
#endif
  f.inode = (uint64_t)st.st_ino;
  return f;
}

// Splits "a/b/c" into its folder part "a/b" and its last name "c".
void splitLast(const std::string& rel, std::string& dir, std::string& name) {
  auto slash = rel.rfind('/');
  dir = slash == std::string::npos ? "" : rel.substr(0, slash);
  name = slash == std::string::npos ? rel : rel.substr(slash + 1);
}

}  // namespace

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

Fd openDirBeneath(int root, const std::string& rel) {
  Fd cur(dup(root));
  if (!cur.ok()) return cur;
  size_t start = 0;
  while (start < rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    std::string part = rel.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == "." || part == "..") {
      errno = EINVAL;
      return Fd();
    }
    Fd next(openat(cur.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.ok()) return next;
    cur = std::move(next);
  }
  return cur;
}

FileFacts factsBeneath(int root, const std::string& rel) {
  std::string dir, name;
  splitLast(rel, dir, name);
  Fd d = openDirBeneath(root, dir);
  struct stat st;
  if (!d.ok() || name.empty() || fstatat(d.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
  return factsFrom(st);
}

Fd openFileBeneath(int root, const std::string& rel) {
  std::string dir, name;
  splitLast(rel, dir, name);
  Fd d = openDirBeneath(root, dir);
  if (!d.ok() || name.empty()) return Fd();
  // O_NONBLOCK: a pipe put in the file's place opens without waiting for a writer, and is refused below.
  Fd f(openat(d.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!f.ok()) return f;
  if (!factsOf(f.get()).regular) return Fd();
  return f;
}

FileFacts factsOf(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return {};
  return factsFrom(st);
}

DirReader::DirReader(Fd dir) : dir_(std::move(dir)) {
  if (!dir_.ok()) return;
  int copy = dup(dir_.get());
  if (copy < 0) return;
  DIR* d = fdopendir(copy);
  if (!d) {
    close(copy);
    return;
  }
  rewinddir(d);
  stream_ = d;
}

DirReader::~DirReader() {
  if (stream_) closedir(static_cast<DIR*>(stream_));
}

bool DirReader::next(DirEntry& entry) {
  if (!stream_) return false;
  while (dirent* e = readdir(static_cast<DIR*>(stream_))) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    unsigned char type = e->d_type;
    if (type == DT_UNKNOWN) {
      struct stat st;
      if (fstatat(dir_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
    }
    entry = DirEntry{std::move(name), type == DT_DIR, type == DT_REG};
    return true;
  }
  closedir(static_cast<DIR*>(stream_));
  stream_ = nullptr;
  return false;
}

bool secretsFileName(const std::string& relName) {
  std::string base = relName.substr(relName.rfind('/') == std::string::npos ? 0 : relName.rfind('/') + 1);
  for (auto& c : base) c = (char)std::tolower((unsigned char)c);
  return base == ".env" || base.rfind(".env.", 0) == 0;
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) { EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr); }

void Sha256::update(const void* data, size_t n) { EVP_DigestUpdate(ctx_.get(), data, n); }

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_.get(), md, &n);
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += digits[md[i] >> 4];
    out += digits[md[i] & 15];
  }
  return out;
}

}  // namespace pine::sources
