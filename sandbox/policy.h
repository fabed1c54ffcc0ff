// The one sandbox policy model every backend enforces (Linux: namespaces +
// Landlock + seccomp; macOS: a generated Seatbelt profile). Paths in a Policy
// are absolute and canonical (realpath'd; on macOS /tmp is /private/tmp).
// Deny wins over allow.
#pragma once
#include <string>
#include <vector>

namespace pine::sandbox {

enum class Network { None, Localhost, All };

struct Policy {
  std::vector<std::string> readable;    // trees that may be read (and executed)
  std::vector<std::string> writable;    // trees that may be read and written
  std::vector<std::string> denyRead;    // never readable, even inside a readable or writable tree
  std::vector<std::string> denyWrite;   // never writable, even inside a writable tree (.git/hooks, ...)
  Network network = Network::None;
};

}  // namespace pine::sandbox
