// `pinectl check`: the security notes of the seed's checklist. Each note names
// the file and the key to change and says what to do. Notes are advice about a
// VALID configuration; an invalid one is reported as errors instead.
#pragma once
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/model.h"

namespace pine::config {

struct SecurityNote {
  std::string file;     // full path; empty for a note about the machine (the sandbox backend)
  std::string keyPath;  // e.g. "routes[0].trust"; empty for the file as a whole
  std::string message;  // what is the case and why it matters
  std::string fix;      // what to change

  std::string format() const;  // "file: keyPath: message\n    fix: ..."
};

// What securityNotes needs beyond the configuration; gatherHomeFacts fills it
// from the disk, tests fill it by hand.
struct HomeFacts {
  std::optional<unsigned> homeMode;          // permission bits of the home folder
  std::optional<unsigned> homeGid;           // its group
  std::optional<unsigned> adminGid;          // pine's admin group: the group pined gave pined.sock, if it did
  std::optional<unsigned> tokenMode, tokenGid;  // data/http-token, when it exists
  std::map<std::string, unsigned> fileModes;  // path relative to the home -> permission bits, for files that exist
  std::string sandboxBackend = "full";        // none | degraded | full, as the sandbox layer reports it
  std::string sandboxDetail;                  // its reason, shown in the note
  // agent id -> files in its workspace besides AGENTS.md, SOUL.md and MEMORY.md (at most 5 listed)
  std::map<std::string, std::vector<std::string>> workspaceFiles;
};

HomeFacts gatherHomeFacts(const Home& home, const std::string& sandboxBackend, const std::string& sandboxDetail = {});

std::vector<SecurityNote> securityNotes(const Home& home, const HomeFacts& facts);

bool isLoopbackHost(const std::string& host);

// The whole command: load, report errors (exit 2), else notes (exit 1) or
// "No security notes" (exit 0).
int runCheck(const std::string& homeDir, const std::string& sandboxBackend, const std::string& sandboxDetail,
             std::ostream& out);

}  // namespace pine::config
