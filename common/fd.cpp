#include "common/fd.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace pine {

void setCloexec(int fd, bool on) {
  int flags = fcntl(fd, F_GETFD);
  if (flags < 0) throw std::runtime_error("fcntl(F_GETFD) on fd " + std::to_string(fd) + ": " + strerror(errno));
  flags = on ? (flags | FD_CLOEXEC) : (flags & ~FD_CLOEXEC);
  if (fcntl(fd, F_SETFD, flags) < 0)
    throw std::runtime_error("fcntl(F_SETFD) on fd " + std::to_string(fd) + ": " + strerror(errno));
}

bool isCloexec(int fd) {
  int flags = fcntl(fd, F_GETFD);
  return flags >= 0 && (flags & FD_CLOEXEC);
}

std::string readFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot read " + path + ": " + strerror(errno));
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      throw std::runtime_error("cannot read " + path + ": " + strerror(e));
    }
    if (n == 0) break;
    out.append(buf, (size_t)n);
  }
  close(fd);
  return out;
}

bool writeAll(int fd, const void* data, size_t len) noexcept {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= (size_t)n;
  }
  return true;
}

void writeFileAtomic(const std::string& path, const std::string& content, unsigned mode) {
  std::string dir = path.substr(0, path.find_last_of('/'));
  if (dir.empty()) dir = "/";
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) throw std::runtime_error("cannot write " + tmp + ": " + strerror(errno));
  bool ok = fchmod(fd, mode) == 0 && writeAll(fd, content.data(), content.size()) && fsync(fd) == 0;
  int e = errno;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) e = errno;
    unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path + ": " + strerror(e));
  }
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
}

}  // namespace pine
