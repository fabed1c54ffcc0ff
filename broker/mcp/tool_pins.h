// A server cannot change a tool after the owner has seen it (issue 16, seed layer 4): the first
// tools/list of a server is pinned (name, description, input schema, annotations, and a hash of
// them); a later list is compared with the pins and the tools that changed, appeared or went
// are named, so that the changed ones stay disabled until the owner reviews the difference.
// Also the names tools get in the model's tool table: mcp__<server>__<tool>.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "broker/mcp/client.h"

namespace pine::mcp {

struct Pin {
  std::string name;
  std::string description;
  std::string schema;       // the input schema as canonical JSON
  std::string annotations;  // canonical JSON
  std::string hash;         // SHA-256 (hex) of the four above
};

Pin pinOf(const ToolInfo& tool);
nlohmann::json pinsToJson(const std::vector<Pin>& pins);
// nullopt when the text is not a list of pins (a damaged record: the owner reviews again).
std::optional<std::vector<Pin>> pinsFromJson(const nlohmann::json& j);

struct PinDiff {
  std::vector<std::string> changed;  // same name, another description, schema or annotations
  std::vector<std::string> added;
  std::vector<std::string> removed;
  bool empty() const { return changed.empty() && added.empty() && removed.empty(); }
};
PinDiff comparePins(const std::vector<Pin>& pinned, const std::vector<ToolInfo>& now);

// "mcp__<server>__<tool>" when both parts are [A-Za-z0-9_-] (no "__" inside the server's name)
// and the whole fits the model APIs' 64 characters; otherwise why not.
std::optional<std::string> modelToolName(const std::string& server, const std::string& tool, std::string* why);

}  // namespace pine::mcp
