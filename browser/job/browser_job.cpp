#include "browser/job/browser_job.h"

#include <nlohmann/json.hpp>

namespace pine::browser {

std::string encodeJob(const BrowserJob& job) {
  nlohmann::json j = {{"server", job.server},          {"allowHosts", job.allowHosts},
                      {"denyHosts", job.denyHosts},    {"allowPrivate", job.allowPrivate},
                      {"chromium", job.chromium},      {"dataDir", job.dataDir}, {"persistent", job.persistent},
                      {"screenshots", job.screenshots}, {"screenshotsShown", job.screenshotsShown}};
  return j.dump() + "\n";
}

std::optional<BrowserJob> decodeJob(const std::string& line, std::string& why) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) {
    why = "the job is not a JSON object";
    return std::nullopt;
  }
  try {
    BrowserJob job;
    job.server = j.value("server", "");
    job.allowHosts = j.value("allowHosts", std::vector<std::string>{});
    job.denyHosts = j.value("denyHosts", std::vector<std::string>{});
    job.allowPrivate = j.value("allowPrivate", false);
    job.chromium = j.value("chromium", "");
    job.dataDir = j.value("dataDir", "");
    job.persistent = j.value("persistent", false);
    job.screenshots = j.value("screenshots", "");
    job.screenshotsShown = j.value("screenshotsShown", "");
    if (job.chromium.empty() || job.dataDir.empty()) {
      why = "the job names no Chromium program or data folder";
      return std::nullopt;
    }
    return job;
  } catch (const nlohmann::json::exception& e) {
    why = std::string("the job has a field of the wrong type: ") + e.what();
    return std::nullopt;
  }
}

}  // namespace pine::browser
