// The sanitizer settings a sanitizer build passes to the programs it starts, and nothing
// else of the starter's environment. They are not secrets, and they make a child report
// like its parent. Inside a sandbox LeakSanitizer cannot work (it needs /proc and ptrace at
// exit), so there leak checks are off: leaks are checked in the unsandboxed tests instead.
#pragma once
#include <cstdlib>
#include <string>
#include <vector>

namespace pine {

inline std::vector<std::string> sanitizerEnvironment(bool sandboxed) {
  std::vector<std::string> env;
  for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"})
    if (const char* v = std::getenv(name))
      env.push_back(std::string(name) + "=" + v + (sandboxed && std::string(name) == "ASAN_OPTIONS" ? ":detect_leaks=0" : ""));
  return env;
}

}  // namespace pine
