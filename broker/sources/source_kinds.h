// Which kinds of source pine runs, in one place: SourceManager starts them, add_source offers
// only these to an agent (issue 15 point 9), and the owner's own pine.yaml may name the rest.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "config/model.h"

namespace pine::sources {

// A source that runs the owner's program: it names one (`use`), or its type is not built in
// (a registered sourceTypes entry).
bool runsProgram(const config::Source& s);

// The built-in types an agent's add_source may set up: each of them runs.
const std::vector<std::string>& typesAgentsSetUp();

// Why add_source cannot set up a source of `type` (nullopt: it can). `sourceTypes` are the
// owner's registered programs, which an agent may use by name.
std::optional<std::string> whyNotForAgents(const std::string& type, const std::vector<config::SourceType>& sourceTypes);

}  // namespace pine::sources
