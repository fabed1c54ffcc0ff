// The job pined hands pine-web before anything else on its socket: one JSON line with the web
// server's rules and, when search is configured, the search key's value. The only part of web/
// pined links (no libcurl, no gumbo): pined encodes, pine-web decodes.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace pine::web {

struct WebJob {
  std::string server;                   // "<agent>/<server>", for pine-web's messages
  std::vector<std::string> allowHosts;  // empty: any host the address rules allow
  std::vector<std::string> denyHosts;
  bool allowPrivate = false;            // loopback, private and link-local addresses too
  std::string searchUrl;                // empty: no search tool
  std::string searchKeyName;            // the .env name, for the placeholder and error texts
  std::string searchKey;                // the value: in this job and pine-web's memory only
};

// One line, '\n' included. The caller wipes it when written.
std::string encodeJob(const WebJob& job);

// nullopt and why when the line is not a job.
std::optional<WebJob> decodeJob(const std::string& line, std::string& why);

}  // namespace pine::web
