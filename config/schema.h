// Internal to config/: one reader per kind of file. Each reads what it can,
// reports every problem into the Ctx, and records cross-file references for
// load.cpp to resolve once the whole home is read.
#pragma once
#include "config/model.h"
#include "config/reader.h"

namespace pine::config::detail {

void readPine(Ctx& ctx, const YAML::Node& root, PineConfig& out);
void readModels(Ctx& ctx, const YAML::Node& root, ModelsConfig& out);
void readAgent(Ctx& ctx, const YAML::Node& root, AgentConfig& out);

// Shared rules, also used by tests.
bool isName(const std::string& s);       // [a-z0-9_-], 1..64, not starting with '-'
bool isModelName(const std::string& s);  // [A-Za-z0-9._:-], 1..128
// Empty when fine, else what is wrong with the five-field cron expression.
std::string cronProblem(const std::string& expr);
// Empty when fine, else what is wrong; wildcards '+' (one level) and '#' (the rest).
std::string topicPatternProblem(const std::string& topic, bool allowWildcards);
// Empty when fine, else what is wrong with a sandbox grant path; var receives an unknown variable's name.
std::string grantPathProblem(const std::string& path, const std::string& homeDir, std::string* unknownVar);

}  // namespace pine::config::detail
