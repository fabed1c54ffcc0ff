// The running pollers of one kind of source (http_poller.h, ftp_poller.h), by source name:
// matched to the wanted set on every update, a poller whose settings changed started again.
#pragma once
#include <spdlog/spdlog.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/model.h"

namespace pine::sources {

// Stops the pollers in `polls` of sources no longer wanted (or whose settings `same` finds
// changed), then, when `canStart`, starts one with `start` for each wanted source of `type`
// that has none.
template <typename Poller>
void updatePolls(std::map<std::string, std::unique_ptr<Poller>>& polls, const std::vector<config::Source>& wanted,
                 const std::string& type, bool (*same)(const config::Source&, const config::Source&), bool canStart,
                 const std::function<std::unique_ptr<Poller>(const config::Source&)>& start) {
  std::map<std::string, const config::Source*> byName;
  for (const auto& s : wanted)
    if (s.type == type) byName[s.name] = &s;
  for (auto it = polls.begin(); it != polls.end();) {
    auto w = byName.find(it->first);
    if (w != byName.end() && same(it->second->source(), *w->second)) {
      ++it;
      continue;
    }
    spdlog::info("source '{}': {}", it->first, w == byName.end() ? "stopped, nobody wants it any more"
                                                                 : "configuration changed, restarting it");
    it = polls.erase(it);
  }
  if (!canStart) return;
  for (const auto& [name, s] : byName)
    if (!polls.count(name)) polls[name] = start(*s);
}

template <typename Poller>
std::vector<std::string> pollNames(const std::map<std::string, std::unique_ptr<Poller>>& polls) {
  std::vector<std::string> out;
  for (const auto& [name, p] : polls) out.push_back(name);
  return out;
}

}  // namespace pine::sources
