// Which configured sources should be running right now.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "config/model.h"

namespace pine::sources {

// The sources of `home` that a subscription names (`subscribedSourceNames`), a
// route names (`source:`), or that have `start: always`; in configuration order.
// Every type is returned: what SourceManager cannot run yet it says so itself.
std::vector<config::Source> wantedSources(const config::Home& home,
                                          const std::set<std::string>& subscribedSourceNames);

}  // namespace pine::sources
