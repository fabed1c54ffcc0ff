#include "config/folder_check.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pine::config {
namespace {

std::string trimmed(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

bool within(const std::string& path, const std::string& dir) {
  return path == dir || path.rfind(dir == "/" ? dir : dir + "/", 0) == 0;
}

std::string homeProblem(const std::string& p, const std::string& home, const std::string& agent) {
  if (home.empty()) return "";
  if (!agent.empty() && p.rfind(home + "/agents/" + agent + "/workspace/", 0) == 0) return "";  // its own workspace
  if (within(p, home))
    return "this folder is in pine's home (" + home + "): only a folder inside the workspace of the source's own " +
           "agent may be watched there (" + home + "/agents/" + (agent.empty() ? "<agent>" : agent) +
           "/workspace/...); .env, the database and other agents' workspaces stay closed to the broker";
  if (within(home, p)) return "this folder contains pine's home (" + home + "), which no sandbox may reach";
  return "";
}

std::string real(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

}  // namespace

std::string folderPathProblem(const std::string& path, const std::string& homeDir, const std::string& agent) {
  if (path.empty() || path[0] != '/')
    return path.rfind("~", 0) == 0 ? "'~' is not expanded here (pined and the broker may run as different users): "
                                     "write the absolute path"
                                   : "expected an absolute path";
  std::string p = trimmed(path);
  if (p == "/") return "the whole file system cannot be watched";
  for (size_t start = 1; start <= p.size();) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    std::string part = p.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return "write the folder's canonical path (no '.', '..' or '//')";
    start = end + 1;
  }
  return homeProblem(p, trimmed(homeDir), agent);
}

std::string folderOnDiskProblem(const std::string& path, const std::string& homeDir, const std::string& agent) {
  std::string p = trimmed(path);
  std::string r = real(p);
  if (r.empty()) return "cannot watch " + p + ": " + strerror(errno) + (errno == ENOENT ? " (create the folder first)" : "");
  struct stat st;
  if (stat(r.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return p + " is not a folder";
  if (r != p) return p + " leads through a link to " + r + ": write " + r + " (the broker's sandbox grants that)";
  std::string home = real(trimmed(homeDir));
  return homeProblem(r, home.empty() ? trimmed(homeDir) : home, agent);
}

std::vector<std::string> watchedFolders(const Home& home) {
  std::vector<std::string> out;
  for (const auto& s : home.pine.sources)
    if (s.type == "folder" && !s.path.empty()) out.push_back(trimmed(s.path));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace pine::config
