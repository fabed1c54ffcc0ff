#include "checkpoint/fs_walk.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace pine::checkpoint {

std::vector<std::string> splitRelative(const std::string& path) {
  if (path.empty() || path[0] == '/') throw std::runtime_error("'" + path + "' is not a relative path");
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..")
      throw std::runtime_error("'" + path + "' has an empty, '.' or '..' component");
    parts.push_back(part);
    start = end + 1;
  }
  return parts;
}

int openParent(int root, const std::string& path, bool create, std::string& why) {
  auto parts = splitRelative(path);
  int dir = fcntl(root, F_DUPFD_CLOEXEC, 3);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int next = openat(dir, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && create) {
      if (mkdirat(dir, parts[i].c_str(), 0755) != 0 && errno != EEXIST) {
        why = "cannot create folder " + parts[i] + ": " + strerror(errno);
        close(dir);
        return -1;
      }
      next = openat(dir, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (next < 0) {
      // ELOOP / ENOTDIR: a link or a file where a folder should be; never gone through.
      why = (errno == ELOOP || errno == ENOTDIR) ? "'" + parts[i] + "' on the way is a link or not a folder"
                                                 : "'" + parts[i] + "': " + strerror(errno);
      close(dir);
      return -1;
    }
    close(dir);
    dir = next;
  }
  return dir;
}

std::string readAll(int fd, size_t limit) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(std::string("read: ") + strerror(errno));
    if (n == 0) break;
    out.append(buf, size_t(n));
    if (out.size() > limit) throw std::runtime_error("grew past " + std::to_string(limit) + " bytes while read");
  }
  return out;
}

void writeAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("write: ") + strerror(errno));
    done += size_t(n);
  }
}

std::string sha256Hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

}  // namespace pine::checkpoint
