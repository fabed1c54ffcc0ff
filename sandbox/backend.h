// Which backend enforces a Policy (sandbox/policy.h). pined picks one at start: Linux's
// (namespaces, Landlock, seccomp, entered by pine-launch) on Linux, Seatbelt's (a profile
// that /usr/bin/sandbox-exec starts the program under) on macOS. On Linux, tests also
// select Seatbelt against a stand-in sandbox-exec (tests/fixtures/sandbox_exec_standin.cpp)
// so that the Mac's start path runs here; the stand-in enforces nothing.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace pine::sandbox {

enum class Backend { Linux, Seatbelt };

inline const char* backendName(Backend b) { return b == Backend::Seatbelt ? "seatbelt" : "linux"; }

inline std::optional<Backend> parseBackend(std::string_view s) {
  if (s == "linux") return Backend::Linux;
  if (s == "seatbelt") return Backend::Seatbelt;
  return std::nullopt;
}

// This platform's own backend: a value that only differs by platform, so an #ifdef.
inline Backend platformBackend() {
#ifdef __APPLE__
  return Backend::Seatbelt;
#else
  return Backend::Linux;
#endif
}

// How pined starts processes under a backend: which one, and for Seatbelt where
// sandbox-exec is (never looked up in PATH; /usr/bin/sandbox-exec unless a test says).
struct BackendChoice {
  Backend backend = platformBackend();
  std::string sandboxExec = "/usr/bin/sandbox-exec";
};

}  // namespace pine::sandbox
