// The seccomp part of the Linux backend: a deny list on top of "allow", built
// with libseccomp in the parent and loaded as raw BPF in the child.
#pragma once
#include <linux/filter.h>

#include <vector>

#include "sandbox/policy.h"

namespace pine::sandbox::seccomp {

// Refused (EPERM unless noted): socket() for every family with network none
// (AF_UNIX too: Landlock does not mediate connecting to pathname sockets; with
// localhost/all only AF_INET, AF_INET6 and NETLINK_ROUTE are allowed);
// io_uring_*; ptrace; process_vm_readv/writev; bpf; every mount call
// (mount, umount2, pivot_root, move_mount, open_tree, fsopen, fsconfig,
// fsmount, fspick, mount_setattr); keyctl, add_key, request_key;
// perf_event_open; userfaultfd; setns; unshare and clone with CLONE_NEWUSER;
// clone3 (ENOSYS: its flags sit in memory seccomp cannot read, and glibc falls
// back to clone, whose flags it can); module, kexec, swap, reboot, acct,
// quotactl, iopl/ioperm, open_by_handle_at, syslog, chroot; ioctl TIOCSTI and
// TIOCLINUX (typing into a terminal). socketpair, sendmsg, recvmsg, sendto
// stay: the inherited broker socket needs them. Syscalls of another ABI (i386,
// x32) kill the process. Throws std::runtime_error when libseccomp fails.
//
// FilterOptions for a process that is not a worker: `unixSockets` also allows
// AF_UNIX (the broker listens on its control socket; with network all only);
// `refuseExecveat` refuses execveat (pine-launch starts the program with
// execve; forbidExec() then closes execve too, from inside).
struct FilterOptions {
  Network network = Network::None;
  bool unixSockets = false;
  bool refuseExecveat = false;
  // Chromium's sandbox makes user namespaces and chroots into an empty folder inside one:
  // CLONE_NEWUSER and chroot stay allowed (sandbox::browserPolicy).
  bool userNamespaces = false;
};
std::vector<sock_filter> buildFilter(const FilterOptions& options);
inline std::vector<sock_filter> buildFilter(Network network) { return buildFilter(FilterOptions{network}); }

// Loads the program (no_new_privs must be set). Async-signal-safe. 0 or errno.
// (seccomp_load.cpp: the launcher links this without libseccomp.)
int loadInChild(const std::vector<sock_filter>& program) noexcept;

// The no-more-exec promise a program makes once started is sandbox/no_exec.h.

}  // namespace pine::sandbox::seccomp
