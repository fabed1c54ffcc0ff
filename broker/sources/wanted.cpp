#include "broker/sources/wanted.h"

namespace pine::sources {

std::vector<config::Source> wantedSources(const config::Home& home,
                                          const std::set<std::string>& subscribedSourceNames) {
  std::set<std::string> routed;
  for (const auto& r : home.pine.routes)
    if (!r.source.empty()) routed.insert(r.source);
  std::vector<config::Source> out;
  for (const auto& s : home.pine.sources) {
    if (s.type == "telegram") continue;  // an owner channel, always on: broker/telegram/
    if (s.start == config::SourceStart::Always || subscribedSourceNames.count(s.name) || routed.count(s.name))
      out.push_back(s);
  }
  return out;
}

}  // namespace pine::sources
