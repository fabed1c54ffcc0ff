#include "common/home.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace pine {

std::string absolutePath(const std::string& path) {
  std::filesystem::path p = std::filesystem::absolute(path).lexically_normal();
  std::string s = p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::string resolveHome(const std::string& flag, bool serviceFallback) {
  if (!flag.empty()) return absolutePath(flag);
  if (const char* env = std::getenv("PINE_HOME"); env && *env) return absolutePath(env);
  const char* home = std::getenv("HOME");
  if (!home || !*home) {
    struct passwd* pw = getpwuid(getuid());
    if (!pw) throw std::runtime_error("cannot find your home folder: set PINE_HOME or pass --home DIR");
    home = pw->pw_dir;
  }
  std::string mine = absolutePath(std::string(home) + "/.pine");
  struct stat st;
  if (serviceFallback && lstat(mine.c_str(), &st) != 0 && stat(kServiceHome, &st) == 0 && S_ISDIR(st.st_mode))
    return kServiceHome;
  return mine;
}

}  // namespace pine
