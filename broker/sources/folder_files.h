// Reading a watched folder without ever leaving it: every path is walked one name at a time
// from the folder's own descriptor with O_NOFOLLOW, so a link (to /etc/passwd, to pine's .env)
// is never followed, and no file outside the folder is opened. POSIX only (macOS too).
#pragma once
#include <openssl/evp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pine::sources {

struct FileFacts {
  bool exists = false;
  bool regular = false;  // a regular file with one name (not a link, hard or symbolic, folder, device or pipe)
  bool dir = false;
  uint64_t size = 0;
  int64_t mtimeNs = 0;
  // The inode's change time: any write moves it, and unlike mtime no user can set it back, so a
  // file rewritten with its size and mtime restored is still seen to have changed.
  int64_t ctimeNs = 0;
  uint64_t inode = 0;
  bool operator==(const FileFacts&) const = default;
};

// An open descriptor, closed when it goes.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept;
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

// The folder `rel` ("a/b", "" for the root itself) below `root`, or an invalid Fd with errno set.
Fd openDirBeneath(int root, const std::string& rel);
// What `rel` is, not following a link at any step.
FileFacts factsBeneath(int root, const std::string& rel);
// A regular file `rel` for reading, or an invalid Fd (a link, a pipe, a device: never opened).
Fd openFileBeneath(int root, const std::string& rel);
FileFacts factsOf(int fd);

struct DirEntry {
  std::string name;
  bool dir = false;
  bool regular = false;
};
// The entries of an open folder (not . and ..), a few at a time: a folder of many names is read
// across turns of the loop. Takes the descriptor; it ends (next() false) when it cannot read.
class DirReader {
 public:
  explicit DirReader(Fd dir);
  ~DirReader();
  DirReader(const DirReader&) = delete;
  DirReader& operator=(const DirReader&) = delete;
  bool next(DirEntry& entry);  // false once all were read

 private:
  Fd dir_;
  void* stream_ = nullptr;  // DIR*, on a copy of dir_
};

// .env, .env.* in any letter case: a secrets file (the path jail's rule) is never read or hashed
// by a folder source, wherever it lies; a hash of a short secret would give it away.
bool secretsFileName(const std::string& relName);

// SHA-256 fed in pieces.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::string hex();  // once, at the end

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

}  // namespace pine::sources
