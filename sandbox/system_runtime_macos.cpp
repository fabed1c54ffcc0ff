// What a program needs of a macOS system to start (sandbox/system_runtime.h): written for
// macOS, not compiled on a Mac here.
#include "sandbox/policy.h"
#include "sandbox/system_runtime.h"

namespace pine::sandbox {

std::vector<const char*> systemRoots() {
  return {"/usr", "/bin", "/sbin", "/System", "/Library", "/private/etc", "/dev/urandom",
          "/dev/random", "/private/var/db/timezone"};
}

std::vector<const char*> brokerSystemRoots() {
  return {"/usr/lib", "/usr/share", "/System", "/private/etc", "/private/var/db/timezone",
          "/opt/homebrew/lib", "/opt/homebrew/opt", "/opt/homebrew/Cellar", "/dev/urandom",
          "/dev/random"};
}

// Mach-O programs name their loader (dyld) inside the shared cache the roots above cover.
std::string elfInterpreter(const std::string&) { return ""; }

// Chromium's macOS sandbox is Seatbelt's own; untried here: the libraries' roots only.
std::vector<const char*> browserSystemReadable() { return {}; }
std::vector<const char*> browserSystemWritable() { return {"/dev/null"}; }
std::vector<const char*> browserHiddenRoots() { return {}; }

}  // namespace pine::sandbox
