// The job pined hands pine-browser before anything else on its socket: one JSON line with the
// browser server's rules and folders. No secret is in it. The only part of browser/ pined links.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace pine::browser {

struct BrowserJob {
  std::string server;                   // "<agent>/<server>", for pine-browser's messages
  std::vector<std::string> allowHosts;  // empty: any host the address rules allow
  std::vector<std::string> denyHosts;
  bool allowPrivate = false;            // loopback, private and link-local addresses too (and plain http)
  std::string chromium;                 // Chromium's program file
  std::string dataDir;                  // the server's folder: fresh profiles are made in it
  bool persistent = false;              // dataDir is a named profile: used as it is, kept
  std::string screenshots;              // where screenshots go; empty: no screenshot tool
  std::string screenshotsShown;         // how the result names that folder (relative to the workspace)
};

// One line, '\n' included.
std::string encodeJob(const BrowserJob& job);

// nullopt and why when the line is not a job.
std::optional<BrowserJob> decodeJob(const std::string& line, std::string& why);

}  // namespace pine::browser
