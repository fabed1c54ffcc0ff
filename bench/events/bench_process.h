// Finding pine's programs among a process's descendants, for the benchmarks that read
// /proc. pined starts every sandboxed program through pine-launch, so the pid that
// `GET /v1/status` gives for a role is pine-launch's (the monitor outside the pid
// namespace); the program itself is below it (monitor -> init -> program).
#pragma once
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace pine::bench {

// Every descendant of `root` (the children of all its threads), depth first.
inline void descendants(pid_t root, std::vector<pid_t>* out) {
  std::string dir = "/proc/" + std::to_string(root) + "/task";
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (auto* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(dir + "/" + e->d_name + "/children");
    pid_t child;
    while (in >> child) {
      out->push_back(child);
      descendants(child, out);
    }
  }
  closedir(d);
}

// The program a process runs now: the file name of /proc/PID/exe, or its comm when the link
// cannot be read (another user's process when not root). "" when the process is gone. A
// process between clone and exec still shows its parent's program.
inline std::string programName(pid_t pid) {
  std::string base = "/proc/" + std::to_string(pid);
  char buf[4096];
  ssize_t n = readlink((base + "/exe").c_str(), buf, sizeof buf - 1);
  if (n > 0) {
    std::string p(buf, (size_t)n);
    const std::string deleted = " (deleted)";
    if (p.size() > deleted.size() && p.compare(p.size() - deleted.size(), deleted.size(), deleted) == 0)
      p.resize(p.size() - deleted.size());
    return p.substr(p.find_last_of('/') + 1);
  }
  std::ifstream in(base + "/comm");
  std::string comm;
  std::getline(in, comm);
  return comm;
}

// The one process running `program` at or below `root` (the pid `GET /v1/status` gives for a
// role). Waits up to `wait` for it to appear; throws when there is none, or more than one.
inline pid_t findProgram(pid_t root, const std::string& program,
                         std::chrono::milliseconds wait = std::chrono::milliseconds(3000)) {
  auto until = std::chrono::steady_clock::now() + wait;
  std::vector<pid_t> found, seen;
  for (;;) {
    seen = {root};
    descendants(root, &seen);
    found.clear();
    for (pid_t p : seen)
      if (programName(p) == program) found.push_back(p);
    if (found.size() == 1) return found[0];
    if (found.size() > 1 || std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string why = std::to_string(found.size());
  why += " processes running ";
  why += program;
  why += " at or below pid ";
  why += std::to_string(root);
  why += " (expected one; the tree, pid:program:";
  for (pid_t p : seen) {
    why += ' ';
    why += std::to_string(p);
    why += ':';
    why += programName(p);
  }
  why += ')';
  throw std::runtime_error(why);
}

}  // namespace pine::bench
