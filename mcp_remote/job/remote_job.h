// The job pined writes first on a pine-mcp-remote's socket: one JSON line with the server's
// URL, its headers with the ${secret:NAME} values already filled in (by pined, the one process
// that reads .env), those values (to redact from what the server sends back) and its name for
// error texts. Header-only: pined links nothing else of the
// connector (no libcurl).
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pine::mcp_remote {

inline constexpr size_t kMaxJobBytes = 1u << 20;

struct RemoteJob {
  std::string name;  // "<agent>/<server>"
  std::string url;
  std::map<std::string, std::string> headers;
  std::vector<std::string> secrets;  // the values filled in: what comes back is redacted of them
};

// One line, '\n' at its end (JSON escapes every line break inside values).
inline std::string encodeJob(const RemoteJob& job) {
  nlohmann::json j = {{"name", job.name}, {"url", job.url}, {"headers", job.headers}, {"secrets", job.secrets}};
  return j.dump() + "\n";
}

// The job from its line (without the '\n'); nullopt and why when it is not one.
inline std::optional<RemoteJob> parseJob(const std::string& line, std::string& why) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j["url"].is_string() || !j["name"].is_string() ||
      !j["headers"].is_object()) {
    why = "the job is not a JSON object with name, url and headers";
    return std::nullopt;
  }
  RemoteJob job;
  job.name = j["name"].get<std::string>();
  job.url = j["url"].get<std::string>();
  for (auto& [k, v] : j["headers"].items()) {
    if (!v.is_string()) {
      why = "header " + k + " is not a string";
      return std::nullopt;
    }
    job.headers[k] = v.get<std::string>();
  }
  if (j.contains("secrets") && j["secrets"].is_array())
    for (auto& v : j["secrets"])
      if (v.is_string()) job.secrets.push_back(v.get<std::string>());
  return job;
}

}  // namespace pine::mcp_remote
