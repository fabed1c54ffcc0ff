#include "web/job/web_job.h"

#include <nlohmann/json.hpp>

namespace pine::web {

std::string encodeJob(const WebJob& job) {
  nlohmann::json j = {{"server", job.server},
                      {"allowHosts", job.allowHosts},
                      {"denyHosts", job.denyHosts},
                      {"allowPrivate", job.allowPrivate},
                      {"searchUrl", job.searchUrl},
                      {"searchKeyName", job.searchKeyName},
                      {"searchKey", job.searchKey}};
  return j.dump() + "\n";
}

std::optional<WebJob> decodeJob(const std::string& line, std::string& why) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) {
    why = "the job is not a JSON object";
    return std::nullopt;
  }
  try {
    WebJob job;
    job.server = j.value("server", "");
    job.allowHosts = j.value("allowHosts", std::vector<std::string>{});
    job.denyHosts = j.value("denyHosts", std::vector<std::string>{});
    job.allowPrivate = j.value("allowPrivate", false);
    job.searchUrl = j.value("searchUrl", "");
    job.searchKeyName = j.value("searchKeyName", "");
    job.searchKey = j.value("searchKey", "");
    return job;
  } catch (const nlohmann::json::exception& e) {
    why = std::string("the job has a field of the wrong type: ") + e.what();
    return std::nullopt;
  }
}

}  // namespace pine::web
