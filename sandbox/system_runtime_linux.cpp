// What a program needs of a Linux system to start (sandbox/system_runtime.h).
#include <fcntl.h>
#include <limits.h>
#include <link.h>  // ElfW: the native ELF types
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "sandbox/policy.h"
#include "sandbox/system_runtime.h"

namespace pine::sandbox {

std::vector<const char*> systemRoots() {
  return {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/proc", "/dev/urandom", "/dev/random"};
}

std::vector<const char*> brokerSystemRoots() {
  return {"/usr/lib",   "/usr/lib32", "/usr/lib64",  "/usr/libx32", "/lib",
          "/lib32",     "/lib64",     "/libx32",     "/usr/local/lib", "/usr/share/zoneinfo",
          "/usr/share/ca-certificates", "/etc",      "/proc",       "/sys/devices/system/cpu",
          "/dev/urandom", "/dev/random"};
}

std::string elfInterpreter(const std::string& program) {
  auto fail = [&](const std::string& why) -> PolicyError {
    return PolicyError("cannot find the program loader of " + program + ": " + why);
  };
  int fd = open(program.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw fail(strerror(errno));
  std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* f) { close(*f); });
  auto readAt = [&](void* buf, size_t len, off_t off) {
    if (pread(fd, buf, len, off) != (ssize_t)len) throw fail("the file is too short for an ELF program");
  };
  unsigned char magic[SELFMAG];
  if (pread(fd, magic, sizeof magic, 0) != (ssize_t)sizeof magic || memcmp(magic, ELFMAG, SELFMAG) != 0)
    throw fail("not an ELF file");
  ElfW(Ehdr) eh;
  readAt(&eh, sizeof eh, 0);
  if (eh.e_ident[EI_CLASS] != (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32))
    throw fail("an ELF file of another word size than this machine's");
  if (eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum > 4096) throw fail("odd program headers");
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    ElfW(Phdr) ph;
    readAt(&ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph));
    if (ph.p_type != PT_INTERP) continue;
    if (ph.p_filesz < 2 || ph.p_filesz > PATH_MAX) throw fail("an odd PT_INTERP entry");
    std::string interp(ph.p_filesz, '\0');
    readAt(interp.data(), interp.size(), (off_t)ph.p_offset);
    while (!interp.empty() && interp.back() == '\0') interp.pop_back();
    std::unique_ptr<char, decltype(&free)> real(realpath(interp.c_str(), nullptr), &free);
    if (interp.empty() || interp[0] != '/' || !real) throw fail("its loader " + interp + " does not exist");
    return real.get();
  }
  return "";  // static: nothing but the program itself is executed
}

// Fonts' settings, the time zone, the accounts (getpwuid), the CPUs' description; /proc
// writable for the uid_map of the user namespace Chromium's sandbox makes, /dev/shm for its
// shared memory.
std::vector<const char*> browserSystemReadable() {
  return {"/etc/fonts", "/etc/localtime", "/etc/passwd", "/etc/group", "/sys/devices/system/cpu"};
}
std::vector<const char*> browserSystemWritable() { return {"/proc", "/dev/shm", "/dev/null"}; }
std::vector<const char*> browserHiddenRoots() { return {"/run"}; }

}  // namespace pine::sandbox
