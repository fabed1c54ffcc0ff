// spawnChild: what a child of pined starts with.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "common/fd.h"
#include "supervisor/spawn.h"
#include "common/cloexec.h"

namespace {

struct Ran {
  int status;
  std::string out;
};

Ran run(pine::SpawnSpec spec) {
  int out[2];
  REQUIRE(pine::pipeCloexec(out) == 0);
  spec.stdoutFd = out[1];
  pid_t pid = pine::spawnChild(spec);
  close(out[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof buf)) > 0) text.append(buf, (size_t)n);
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {status, text};
}

}  // namespace

TEST_CASE("a child gets fd 3 and nothing else above stderr, a fixed environment, its own session") {
  int sv[2];
  REQUIRE(pine::socketpairCloexec(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  int leaked = open("/dev/null", O_RDONLY);  // not close-on-exec: spawnChild must close it anyway
  REQUIRE(leaked > 3);
  pine::SpawnSpec spec;
  spec.program = "/bin/sh";
  spec.args = {"sh", "-c",
               "ls /proc/self/fd | sort -n | tr '\\n' ' '; echo; env | sort | tr '\\n' ' '; echo;"
               " ps -o sid= -p $$; echo $$; readlink /proc/self/fd/0"};
  spec.env = {"PATH=/usr/bin:/bin", "ONLY=this"};
  spec.fd3 = sv[1];
  auto r = run(spec);
  CHECK(WIFEXITED(r.status));
  // fds: 0 1 2 3, plus the one ls itself opens to read the directory.
  CHECK(r.out.rfind("0 1 2 3 4 \n", 0) == 0);
  CHECK(r.out.find("ONLY=this") != std::string::npos);
  CHECK(r.out.find("HOME=") == std::string::npos);
  // sid == pid: the child leads its own session.
  std::string rest = r.out.substr(r.out.find('\n', r.out.find('\n') + 1) + 1);
  int sid = std::stoi(rest);
  int pid = std::stoi(rest.substr(rest.find('\n') + 1));
  CHECK(sid == pid);
  CHECK(r.out.find("/dev/null") != std::string::npos);  // stdin
  close(leaked);
  close(sv[0]);
  close(sv[1]);
}

TEST_CASE("a program that cannot be executed is an error that names it and says why") {
  pine::SpawnSpec spec;
  spec.program = "/nonexistent/pine-program";
  spec.args = {"x"};
  try {
    pine::spawnChild(spec);
    FAIL("no throw");
  } catch (std::exception& e) {
    std::string what = e.what();
    CHECK(what.find("/nonexistent/pine-program") != std::string::npos);
    CHECK(what.find("No such file") != std::string::npos);
  }
}

TEST_CASE("signals blocked or ignored in the parent are reset in the child") {
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigprocmask(SIG_BLOCK, &block, nullptr);
  signal(SIGINT, SIG_IGN);
  pine::SpawnSpec spec;
  spec.program = "/bin/sh";
  spec.args = {"sh", "-c", "grep -E '^(SigBlk|SigIgn)' /proc/self/status"};
  spec.env = {"PATH=/usr/bin:/bin"};
  auto r = run(spec);
  sigprocmask(SIG_UNBLOCK, &block, nullptr);
  signal(SIGINT, SIG_DFL);
  CHECK(r.out.find("SigBlk:\t0000000000000000") != std::string::npos);
  CHECK(r.out.find("SigIgn:\t0000000000000000") != std::string::npos);
}
