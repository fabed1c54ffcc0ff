// macOS: dyld's path of the running program, made canonical as Linux's /proc/self/exe is
// (no links, no "..": /private/tmp, not /tmp). Never compiled on a Mac.
#include <limits.h>
#include <mach-o/dyld.h>
#include <stdlib.h>

#include <cstdint>
#include <string>

#include "common/unix_socket.h"

namespace pine {

std::string programDir() {
  char raw[PATH_MAX];
  uint32_t size = sizeof raw;
  if (_NSGetExecutablePath(raw, &size) != 0) return ".";  // size now says how much it needs: > PATH_MAX
  char real[PATH_MAX];
  if (realpath(raw, real) == nullptr) return ".";
  std::string s(real);
  return s.substr(0, s.find_last_of('/'));
}

}  // namespace pine
