#include "broker/task_changes.h"

#include "broker/store/store.h"
#include "common/log.h"
#include "common/rpc_link.h"

namespace pine {

std::string changesSummary(const nlohmann::json& files) {
  std::string names;
  size_t shown = 0;
  for (const auto& f : files) {
    if (shown == 20) {
      names += ", and " + std::to_string(files.size() - shown) + " more";
      break;
    }
    names += (shown++ ? ", " : "") + f.value("path", std::string());
  }
  return std::to_string(files.size()) + (files.size() == 1 ? " file" : " files") + " changed: " + names;
}

kj::Promise<void> recordTaskChanges(RunServices& services, const std::string& task, const std::string& agent,
                                    bool tainted) {
  auto req = services.supervisor().taskChangesRequest();
  req.setTask(task);
  req.setAgent(agent);
  req.setDiff(false);
  return req.send().then(
      [&services, task, agent, tainted](auto&& r) {
        auto j = nlohmann::json::parse(std::string(r.getResult().cStr()), nullptr, false);
        if (!j.is_object() || !j.contains("files") || !j["files"].is_array()) {
          spdlog::warn("task {}: pined's checkpoint answer was not the JSON expected", task);
          return;
        }
        const auto& files = j["files"];
        nlohmann::json names = nlohmann::json::array();
        for (const auto& f : files) names.push_back(f.value("path", std::string()));
        services.store().setTaskChanges({task, agent, tainted, (long long)files.size(), names.dump(), nowMs()});
        if (tainted && !files.empty())
          services.notifyOwner(agent,
                               "a run that had read outside content changed your files (" + changesSummary(files) +
                                   "); see `pinectl changes " + task + "`, undo with `pinectl undo " + task + "`",
                               task, "taintedChanges");
      },
      [task](kj::Exception&& e) {
        spdlog::info("task {}: what it changed is not known: {}", task, describeRemote(e));
      });
}

}  // namespace pine
