#include "broker/sources/source_kinds.h"

#include <algorithm>

namespace pine::sources {
namespace {

const std::vector<std::string> kBuiltIn = {"webhook", "mqtt", "folder", "http", "command", "telegram", "ftp"};

std::string listed(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

bool runsProgram(const config::Source& s) {
  return !s.use.empty() || std::find(kBuiltIn.begin(), kBuiltIn.end(), s.type) == kBuiltIn.end();
}

const std::vector<std::string>& typesAgentsSetUp() {
  static const std::vector<std::string> types = {"webhook", "mqtt", "folder", "http", "command", "ftp"};
  return types;
}

std::optional<std::string> whyNotForAgents(const std::string& type, const std::vector<config::SourceType>& sourceTypes) {
  const auto& ok = typesAgentsSetUp();
  if (std::find(ok.begin(), ok.end(), type) != ok.end()) return std::nullopt;
  for (const auto& t : sourceTypes)
    if (t.name == type) return std::nullopt;
  std::vector<std::string> registered;
  for (const auto& t : sourceTypes) registered.push_back(t.name);
  std::string offer = "add_source sets up a source of type " + listed(ok) +
                      (registered.empty() ? std::string(" (no source types are registered)")
                                          : ", or of a registered source type: " + listed(registered));
  if (type == "telegram") return "telegram is a channel to the owner, set up by the owner in pine.yaml; " + offer;
  if (type.empty()) return "the source has no \"type\"; " + offer;
  return "there is no source type '" + type + "'; " + offer;
}

}  // namespace pine::sources
