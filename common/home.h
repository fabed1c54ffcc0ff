// Where things live in a pine home. One place names every path, so that the
// supervisor, the broker and pinectl never disagree about them.
#pragma once
#include <string>

namespace pine {

struct Home {
  std::string root;

  std::string data() const { return root + "/data"; }
  std::string logs() const { return root + "/data/logs"; }
  std::string agents() const { return root + "/agents"; }
  std::string sandboxes() const { return root + "/sandbox"; }
  std::string socket() const { return root + "/pine.sock"; }        // the broker's control API
  std::string ownerSocket() const { return root + "/pined.sock"; }  // pinectl -> pined: secrets only
  std::string token() const { return root + "/data/http-token"; }
  std::string audit() const { return root + "/data/logs/audit.jsonl"; }
  std::string lock() const { return root + "/data/pined.lock"; }
  std::string pidFile() const { return root + "/data/pined.pid"; }
  std::string logFile(const std::string& role) const { return logs() + "/" + role + ".log"; }
};

// Where the service install keeps pine's home (scripts/service/, docs/setup.md): a constant that
// only differs in value, so an #ifdef rather than a file per platform.
#ifdef __APPLE__
inline constexpr const char* kServiceHome = "/usr/local/var/pine";
#else
inline constexpr const char* kServiceHome = "/var/lib/pine";
#endif

// pined's rule: --home DIR, else $PINE_HOME, else ~/.pine. pinectl's (serviceFallback) adds:
// when ~/.pine does not exist, the service's home if it does. Returns an absolute path.
std::string resolveHome(const std::string& flag, bool serviceFallback = false);

// Absolute, without trailing slash; relative paths are taken from the current directory.
std::string absolutePath(const std::string& path);

}  // namespace pine
