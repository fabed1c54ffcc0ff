// The whole environment of a command an agent runs: its shell's (worker/tools/shell_tool.cpp)
// and a command source's (supervisor/source_command.cpp), so that the two never differ. Nothing
// of pine's own environment and no secret: a search path, a locale, its private home and temp.
#pragma once
#include <string>
#include <vector>

namespace pine::sandbox {

inline std::vector<std::string> shellEnvironment(const std::string& home, const std::string& tmpdir) {
  std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"};
  if (!home.empty()) env.push_back("HOME=" + home);
  if (!tmpdir.empty()) env.push_back("TMPDIR=" + tmpdir);
  return env;
}

}  // namespace pine::sandbox
