#include "sandbox/linux/seccomp_filter.h"

#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace pine::sandbox::seccomp {
namespace {

using Ctx = std::unique_ptr<void, decltype(&seccomp_release)>;

void check(int rc, const std::string& what) {
  if (rc < 0) throw std::runtime_error("seccomp: " + what + ": " + strerror(-rc));
}

// Adds a rule for a syscall this architecture may not have (iopl on arm64):
// an unknown name is skipped, anything else is an error.
void deny(scmp_filter_ctx ctx, const char* name, int err, unsigned n = 0, const scmp_arg_cmp* args = nullptr) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return;
  check(seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(err), nr, n, args), name);
}

}  // namespace

std::vector<sock_filter> buildFilter(const FilterOptions& options) {
  const Network network = options.network;
  Ctx ctx(seccomp_init(SCMP_ACT_ALLOW), &seccomp_release);
  if (!ctx) throw std::runtime_error("seccomp: seccomp_init failed");
  scmp_filter_ctx c = ctx.get();
  // We set no_new_privs ourselves, before Landlock.
  check(seccomp_attr_set(c, SCMP_FLTATR_CTL_NNP, 0), "attr nnp");

  if (network == Network::None) {
    deny(c, "socket", EPERM);
  } else {
    // The kernel reads the family as an int: compare the low 32 bits only, so
    // that high garbage bits cannot slip a family past the filter. Families
    // from 64 up do not exist (AF_MAX is below that); the kernel refuses them.
    for (unsigned fam = 0; fam < 64; ++fam) {
      if (fam == AF_INET || fam == AF_INET6) continue;
      if (fam == AF_UNIX && options.unixSockets) continue;
      if (fam == AF_NETLINK) {
        scmp_arg_cmp a[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, fam),
                            SCMP_A2(SCMP_CMP_NE, (scmp_datum_t)NETLINK_ROUTE, 0)};
        deny(c, "socket", EPERM, 2, a);
        continue;
      }
      scmp_arg_cmp a[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffULL, fam)};
      deny(c, "socket", EPERM, 1, a);
    }
  }

  for (const char* name :
       {"ptrace", "process_vm_readv", "process_vm_writev", "bpf", "mount", "umount2", "umount", "pivot_root",
        "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "keyctl", "add_key",
        "request_key", "perf_event_open", "userfaultfd", "setns", "kexec_load", "kexec_file_load", "init_module",
        "finit_module", "delete_module", "swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "iopl",
        "ioperm", "open_by_handle_at", "syslog", "uselib", "lookup_dcookie", "vm86", "vm86old",
        "io_uring_setup", "io_uring_enter", "io_uring_register"})
    deny(c, name, EPERM);
  if (!options.userNamespaces) deny(c, "chroot", EPERM);

  if (!options.userNamespaces) {
    scmp_arg_cmp a[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, (scmp_datum_t)CLONE_NEWUSER, (scmp_datum_t)CLONE_NEWUSER)};
    deny(c, "unshare", EPERM, 1, a);
    deny(c, "clone", EPERM, 1, a);
  }
  deny(c, "clone3", ENOSYS);
  if (options.refuseExecveat) deny(c, "execveat", EPERM);
  for (unsigned long req : {(unsigned long)TIOCSTI, (unsigned long)TIOCLINUX}) {
    scmp_arg_cmp a[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, req)};
    deny(c, "ioctl", EPERM, 1, a);
  }

  // libseccomp 2.5 exports to a descriptor only: go through a memfd.
  int fd = memfd_create("pine-seccomp", MFD_CLOEXEC);
  if (fd < 0) throw std::runtime_error(std::string("seccomp: memfd_create: ") + strerror(errno));
  int rc = seccomp_export_bpf(c, fd);
  if (rc < 0) {
    close(fd);
    check(rc, "export");
  }
  off_t size = lseek(fd, 0, SEEK_END);
  if (size <= 0 || size % sizeof(sock_filter) != 0) {
    close(fd);
    throw std::runtime_error("seccomp: exported program has an odd size");
  }
  std::vector<sock_filter> prog((size_t)size / sizeof(sock_filter));
  ssize_t n = pread(fd, prog.data(), (size_t)size, 0);
  close(fd);
  if (n != size) throw std::runtime_error("seccomp: short read of the exported program");
  return prog;
}

}  // namespace pine::sandbox::seccomp
