// Linux: the kernel's link to the running program's file.
#include <limits.h>
#include <unistd.h>

#include <string>

#include "common/unix_socket.h"

namespace pine {

std::string programDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  std::string s(buf);
  return s.substr(0, s.find_last_of('/'));
}

}  // namespace pine
