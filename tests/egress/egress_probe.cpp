// Started by the egress tests inside the sandbox of a pine-egress process (egressSandbox),
// it tries what that process must not be able to do, and what it must, and says what
// happened, one line each on stdout:
//   read <path>      open for reading and read a byte      -> "read <path>: ok" or ": <errno name>"
//   list <path>      open a folder and read an entry
//   write <path>     create and write a file
//   connect <port>   TCP connect to 127.0.0.1:<port>
//   unix <path>      connect to a unix socket
//   exec <path>      fork, and execute it in the child (which exits 0 if it started)
//   ids -            the uid and gid it runs as
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/sanitizer_no_proc.h"  // it runs in the egress sandbox: no /proc
#include "common/cloexec.h"

namespace {

std::string result(bool ok) { return ok ? "ok" : strerrorname_np(errno); }

std::string tryRead(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return result(false);
  char c;
  bool ok = read(fd, &c, 1) >= 0;
  int e = errno;
  close(fd);
  errno = e;
  return result(ok);
}

std::string tryList(const char* path) {
  DIR* d = opendir(path);
  if (d == nullptr) return result(false);
  errno = 0;
  bool ok = readdir(d) != nullptr;
  int e = errno;
  closedir(d);
  errno = e;
  return result(ok);
}

std::string tryWrite(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return result(false);
  bool ok = write(fd, "x", 1) == 1;
  int e = errno;
  close(fd);
  unlink(path);
  errno = e;
  return result(ok);
}

std::string tryConnect(int port) {
  int fd = pine::socketCloexec(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return result(false);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  int e = errno;
  close(fd);
  errno = e;
  return result(ok);
}

std::string tryUnix(const char* path) {
  int fd = pine::socketCloexec(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return result(false);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path, sizeof a.sun_path - 1);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  int e = errno;
  close(fd);
  errno = e;
  return result(ok);
}

std::string tryExec(const char* path) {
  int pipefd[2];
  if (pine::pipeCloexec(pipefd) != 0) return result(false);
  pid_t pid = fork();
  if (pid == 0) {
    char* argv[] = {const_cast<char*>(path), nullptr};
    char* envp[] = {nullptr};
    execve(path, argv, envp);
    int e = errno;
    ssize_t ignored = write(pipefd[1], &e, sizeof e);
    (void)ignored;
    _exit(127);
  }
  close(pipefd[1]);
  int e = 0;
  ssize_t n = read(pipefd[0], &e, sizeof e);  // closed without a word: execve succeeded
  close(pipefd[0]);
  waitpid(pid, nullptr, 0);
  errno = e;
  return result(n != (ssize_t)sizeof e);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string op = argv[i];
    const char* arg = argv[i + 1];
    std::string r;
    if (op == "read") r = tryRead(arg);
    else if (op == "list") r = tryList(arg);
    else if (op == "write") r = tryWrite(arg);
    else if (op == "connect") r = tryConnect(std::atoi(arg));
    else if (op == "unix") r = tryUnix(arg);
    else if (op == "exec") r = tryExec(arg);
    else if (op == "ids") r = std::to_string(getuid()) + " " + std::to_string(getgid());
    else r = "unknown operation";
    std::printf("%s %s: %s\n", op.c_str(), arg, r.c_str());
  }
  return 0;
}
