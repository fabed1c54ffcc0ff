#include "supervisor/home_layout.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/fd.h"

namespace pine {
namespace {

void makeDir(const std::string& path, bool tighten) {
  if (mkdir(path.c_str(), 0700) == 0) return;
  if (errno != EEXIST) throw std::runtime_error("cannot create " + path + ": " + strerror(errno));
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::runtime_error(path + " exists and is not a folder: move it away");
  if (tighten && (st.st_mode & 077) && chmod(path.c_str(), 0700) != 0)
    throw std::runtime_error("cannot set mode 700 on " + path + ": " + strerror(errno));
}

}  // namespace

void prepareHome(const Home& home) {
  std::string parent = home.root.substr(0, home.root.find_last_of('/'));
  struct stat st;
  if (!parent.empty() && stat(parent.c_str(), &st) != 0)
    throw std::runtime_error("the folder that should hold pine's home does not exist: " + parent);
  makeDir(home.root, false);
  makeDir(home.data(), true);
  makeDir(home.logs(), true);
  makeDir(home.agents(), false);
  makeDir(home.sandboxes(), true);
  makeDir(home.root + "/checkpoints", false);  // pined's (checkpoint_call.h); the broker's sandbox denies it
}

void ensureControlToken(const Home& home) {
  struct stat st;
  if (stat(home.token().c_str(), &st) == 0) {
    if ((st.st_mode & 077) && chmod(home.token().c_str(), 0600) != 0)
      throw std::runtime_error("cannot set mode 600 on " + home.token() + ": " + strerror(errno));
    return;
  }
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1) throw std::runtime_error("no randomness for the control token");
  static const char hex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char c : raw) {
    token += hex[c >> 4];
    token += hex[c & 15];
  }
  writeFileAtomic(home.token(), token + "\n", 0600);
}

int lockHome(const Home& home) {
  int fd = open(home.lock().c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw std::runtime_error("cannot open " + home.lock() + ": " + strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::string holder;
    try {
      holder = readFile(home.pidFile());
      while (!holder.empty() && holder.back() == '\n') holder.pop_back();
    } catch (...) {
    }
    close(fd);
    throw std::runtime_error("another pined already runs on " + home.root +
                             (holder.empty() ? "" : " (pid " + holder + ")") + "; stop it first");
  }
  return fd;
}

}  // namespace pine
