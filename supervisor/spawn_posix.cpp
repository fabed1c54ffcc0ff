// spawnChild() on macOS: posix_spawn, for the Seatbelt backend (sandbox-exec) or
// no sandbox. THIS FILE HAS NEVER BEEN COMPILED ON A MAC: it was written from
// Apple's posix_spawn(2) and only checked for syntax against Linux's headers,
// with stand-ins for the Apple-only names. The first macOS build must review it.
//
// What spawn.h promises, and how it is kept here:
// - a new session: POSIX_SPAWN_SETSID;
// - signals unblocked and at their defaults: POSIX_SPAWN_SETSIGMASK (empty) and
//   POSIX_SPAWN_SETSIGDEF (every signal that may be caught);
// - stdin on /dev/null (or stdinFd), stdout/stderr and fd 3 as asked, nothing else open:
//   file actions under POSIX_SPAWN_CLOEXEC_DEFAULT, which closes every descriptor
//   that no file action names (so fds 1 and 2, when kept, are named by
//   posix_spawn_file_actions_addinherit_np);
// - the working directory: posix_spawn_file_actions_addchdir_np (macOS 10.15);
// - no parent-death signal: macOS has none. A child whose pined died is not
//   killed by the kernel; it sees its fd 3 link end.
// posix_spawn is one system call on macOS: a failed file action or exec is its
// return value, so no report pipe is needed. A Linux plan (spec.sandbox) cannot be
// entered here and is refused.
#include "supervisor/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/unix_socket.h"

#ifndef __APPLE__
#error "spawn_posix.cpp is macOS's spawnChild (POSIX_SPAWN_CLOEXEC_DEFAULT); Linux builds spawn_linux.cpp"
#endif

namespace pine {
namespace {

std::vector<char*> pointers(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

struct Attr {
  posix_spawnattr_t a;
  Attr() {
    if (int e = posix_spawnattr_init(&a)) throw std::runtime_error(std::string("posix_spawnattr_init: ") + strerror(e));
  }
  ~Attr() { posix_spawnattr_destroy(&a); }
};

struct Actions {
  posix_spawn_file_actions_t a;
  Actions() {
    if (int e = posix_spawn_file_actions_init(&a))
      throw std::runtime_error(std::string("posix_spawn_file_actions_init: ") + strerror(e));
  }
  ~Actions() { posix_spawn_file_actions_destroy(&a); }
};

void check(int err, const char* what) {
  if (err != 0) throw std::runtime_error(std::string(what) + ": " + strerror(err));
}

}  // namespace

std::string defaultLauncher() { return programDir() + "/pine-launch"; }

pid_t spawnChild(const SpawnSpec& spec) {
  if (spec.sandbox)
    throw std::runtime_error("cannot start " + spec.program +
                             ": a Linux sandbox plan cannot be entered on macOS (the Seatbelt backend is this "
                             "system's; nothing runs unconfined)");
  std::string path;
  std::vector<std::string> argv, envp = spec.env;
  if (spec.seatbelt) {
    argv = seatbeltArgv(spec);
    path = spec.sandboxExec;
  } else {
    path = spec.program;
    argv = spec.args;
  }

  Attr attr;
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  check(posix_spawnattr_setsigmask(&attr.a, &none), "posix_spawnattr_setsigmask");
  check(posix_spawnattr_setsigdefault(&attr.a, &all), "posix_spawnattr_setsigdefault");
  check(posix_spawnattr_setflags(&attr.a, (short)(POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                                     POSIX_SPAWN_CLOEXEC_DEFAULT)),  // the flags are a short
        "posix_spawnattr_setflags");

  // In the order spawn_linux.cpp arranges them: 0, 1, 2, then 3, then the working directory.
  Actions fa;
  if (spec.stdinFd >= 0)
    check(posix_spawn_file_actions_adddup2(&fa.a, spec.stdinFd, 0), "posix_spawn_file_actions_adddup2");
  else
    check(posix_spawn_file_actions_addopen(&fa.a, 0, "/dev/null", O_RDWR, 0), "posix_spawn_file_actions_addopen");
  for (auto [from, to] : {std::pair{spec.stdoutFd, 1}, std::pair{spec.stderrFd, 2}}) {
    if (from < 0 || from == to)
      check(posix_spawn_file_actions_addinherit_np(&fa.a, to), "posix_spawn_file_actions_addinherit_np");
    else
      check(posix_spawn_file_actions_adddup2(&fa.a, from, to), "posix_spawn_file_actions_adddup2");
  }
  if (spec.fd3 == 3)
    check(posix_spawn_file_actions_addinherit_np(&fa.a, 3), "posix_spawn_file_actions_addinherit_np");
  else if (spec.fd3 >= 0)
    check(posix_spawn_file_actions_adddup2(&fa.a, spec.fd3, 3), "posix_spawn_file_actions_adddup2");
  if (!spec.cwd.empty())
    check(posix_spawn_file_actions_addchdir_np(&fa.a, spec.cwd.c_str()), "posix_spawn_file_actions_addchdir_np");

  auto argvp = pointers(argv), envpp = pointers(envp);
  pid_t pid = -1;
  int err = posix_spawn(&pid, path.c_str(), &fa.a, &attr.a, argvp.data(), envpp.data());
  if (err != 0) {
    if (spec.seatbelt)
      throw std::runtime_error("cannot start " + spec.program + " in its sandbox: " + path + ": " + strerror(err) +
                               " (the Seatbelt backend needs sandbox-exec; nothing runs unconfined)");
    throw std::runtime_error("cannot start " + spec.program + ": " + strerror(err));
  }
  return pid;
}

}  // namespace pine
