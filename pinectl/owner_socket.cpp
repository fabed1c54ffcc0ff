#include "pinectl/owner_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/cloexec.h"
#include "pinectl/access_problem.h"

namespace pine {

int connectOwnerSocket(const std::string& home) {
  std::string path = home + "/pined.sock";
  int fd = socketCloexec(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (fd < 0 || path.size() >= sizeof addr.sun_path) throw std::runtime_error("cannot reach pined at " + path);
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
    int e = errno;
    close(fd);
    throw std::runtime_error("cannot reach pined: " + describeAccessProblem(home, path, e));
  }
  return fd;
}

bool pinedIsDown(const std::string& home) {
  try {
    close(connectOwnerSocket(home));
    return false;
  } catch (std::exception&) {
  }
  std::string path = home + "/pined.sock";
  int fd = socketCloexec(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  if (fd < 0 || path.size() >= sizeof addr.sun_path) return false;
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int rc = connect(fd, (struct sockaddr*)&addr, sizeof addr);
  int e = errno;
  close(fd);
  return rc != 0 && (e == ENOENT || e == ECONNREFUSED);
}

}  // namespace pine
