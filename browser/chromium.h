// Starting headless Chromium for pine-browser: its command line (its own sandbox on: never
// --no-sandbox; a fresh profile; no first run, sync, extensions, QUIC or WebRTC UDP outside the
// proxy; every connection through pine-browser's proxy, loopback too; no name resolution of
// its own) and the process, with the DevTools pipe on its fds 3 (commands in) and 4 (out).
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace pine::browser {

std::vector<std::string> chromiumArgs(const std::string& program, const std::string& profileDir, int proxyPort);

// Chromium's environment: HOME and the XDG folders inside the profile, TMPDIR, LANG.
std::vector<std::string> chromiumEnv(const std::string& profileDir, const std::string& tmpDir);

struct ChromiumProcess {
  pid_t pid = -1;       // also its process group
  int commands = -1;    // we write here (Chromium's fd 3)
  int events = -1;      // we read here (Chromium's fd 4)
};

// Throws std::runtime_error saying why it could not be started.
ChromiumProcess startChromium(const std::vector<std::string>& args, const std::vector<std::string>& env);

// SIGKILL to its process group, then reaped.
void stopChromium(ChromiumProcess& p);

}  // namespace pine::browser
