// A program's own promise once it has started, like pledge(2) without "exec":
// execve and execveat fail with EPERM from now on, in every thread of the
// process (TSYNC) and in whatever it might still start. pine-broker makes it
// first thing in main(): the sandbox pine-launch put it in must let exactly one
// exec through (the broker's own), which a seccomp filter loaded before that
// exec cannot count. Header-only, no libseccomp: whoever includes it needs
// nothing else. On macOS the broker's Seatbelt profile allows no exec but the
// program's own, so there is nothing to add: forbidExec() returns 0 there. It sits
// in sandbox/, not sandbox/linux/, because pine-broker includes it on every platform.
#pragma once

#ifdef __linux__
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace pine::sandbox {

// 0 or an errno value.
inline int forbidExec() noexcept {
#ifdef __linux__
#if defined(__x86_64__)
  constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#else
#error "forbidExec: add this architecture's AUDIT_ARCH"
#endif
  // Another architecture's calls, and x32's (numbers with bit 30 set), end the process.
  static const sock_filter kProgram[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  sock_fprog prog{(unsigned short)(sizeof kProgram / sizeof kProgram[0]), const_cast<sock_filter*>(kProgram)};
  long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
  if (rc < 0) return errno;
  return rc == 0 ? 0 : EAGAIN;  // TSYNC: a thread (its id in rc) could not take the filter
#else
  return 0;
#endif
}

}  // namespace pine::sandbox
