#include "sandbox/folder_rules.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <vector>

namespace pine::sandbox {
namespace {

// Folders of the system itself: never a conversation's to write, nor any folder inside them.
// The runtime agents read (the platform's list), and the rest of the system's own folders.
std::vector<std::string> systemFolders() {
  std::vector<std::string> list = defaultSystemReadable();
  for (const char* more : {"/boot", "/dev", "/var", "/run", "/snap", "/private/etc", "/private/var",
                           "/System", "/Library", "/Applications", "/cores"})
    list.push_back(more);
  return list;
}

}  // namespace

std::string checkOpenedFolder(const std::string& path, const AgentPaths& paths) {
  if (path.empty() || path[0] != '/')
    throw PolicyError("the folder \"" + path + "\" is not an absolute path: give it from / (pinectl resolves a relative one)");
  std::string canon = canonicalPath(path);
  struct stat st {};
  if (stat(canon.c_str(), &st) != 0)
    throw PolicyError("the folder " + path + " cannot be reached (" + std::strerror(errno) +
                      "): create it, or let pine's processes traverse the folders above it");
  if (!S_ISDIR(st.st_mode)) throw PolicyError(path + " is not a folder: open the folder that holds it");
  if (canon == "/") throw PolicyError("the folder / is the whole system: open the one folder the work needs");
  for (const auto& sys : systemFolders()) {
    std::string c;
    try {
      c = canonicalPath(sys);
    } catch (const PolicyError&) {
      continue;
    }
    if (pathWithin(canon, c) || pathWithin(c, canon))
      throw PolicyError("the folder " + path + (canon != path ? " (" + canon + ")" : "") +
                        " is or holds the system folder " + sys + ": open a folder of your own");
  }
  if (auto why = neverGrantableReason(canon, paths))
    throw PolicyError("the folder " + path + (canon != path ? " (" + canon + ")" : "") + " cannot be opened: " + *why);
  return canon;
}

}  // namespace pine::sandbox
