#include "broker/mcp/tool_pins.h"

#include <set>

#include "common/sha256_hex.h"

namespace pine::mcp {

namespace {

std::string canonical(const nlohmann::json& j) {
  // nlohmann's object is a std::map: keys come out sorted, so equal JSON gives equal text.
  return j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

bool nameChars(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '_' && c != '-') return false;
  return true;
}

}  // namespace

Pin pinOf(const ToolInfo& tool) {
  Pin p;
  p.name = tool.name;
  p.description = tool.description;
  p.schema = canonical(tool.inputSchema);
  p.annotations = canonical(tool.annotations);
  // Length-prefixed parts: no two different tools hash alike by moving text between fields.
  std::string all;
  for (const std::string* part : {&p.name, &p.description, &p.schema, &p.annotations})
    all += std::to_string(part->size()) + ":" + *part;
  p.hash = sha256Hex(all);
  return p;
}

nlohmann::json pinsToJson(const std::vector<Pin>& pins) {
  nlohmann::json list = nlohmann::json::array();
  for (auto& p : pins)
    list.push_back({{"name", p.name}, {"description", p.description}, {"schema", p.schema},
                    {"annotations", p.annotations}, {"hash", p.hash}});
  return list;
}

std::optional<std::vector<Pin>> pinsFromJson(const nlohmann::json& j) {
  if (!j.is_array()) return std::nullopt;
  std::vector<Pin> out;
  for (auto& e : j) {
    if (!e.is_object()) return std::nullopt;
    Pin p;
    for (auto [key, field] : {std::pair{"name", &p.name}, std::pair{"description", &p.description},
                              std::pair{"schema", &p.schema}, std::pair{"annotations", &p.annotations},
                              std::pair{"hash", &p.hash}}) {
      if (!e.contains(key) || !e[key].is_string()) return std::nullopt;
      *field = e[key].get<std::string>();
    }
    out.push_back(std::move(p));
  }
  return out;
}

PinDiff comparePins(const std::vector<Pin>& pinned, const std::vector<ToolInfo>& now) {
  PinDiff d;
  std::map<std::string, const Pin*> byName;
  for (auto& p : pinned) byName[p.name] = &p;
  std::set<std::string> seen;
  for (auto& t : now) {
    if (!seen.insert(t.name).second) continue;  // listed twice: the first counts
    auto it = byName.find(t.name);
    if (it == byName.end()) d.added.push_back(t.name);
    else if (pinOf(t).hash != it->second->hash) d.changed.push_back(t.name);
  }
  for (auto& p : pinned)
    if (!seen.count(p.name)) d.removed.push_back(p.name);
  return d;
}

std::optional<std::string> modelToolName(const std::string& server, const std::string& tool, std::string* why) {
  auto refuse = [&](std::string text) -> std::optional<std::string> {
    if (why) *why = std::move(text);
    return std::nullopt;
  };
  if (!nameChars(server) || server.find("__") != std::string::npos)
    return refuse("the server's name must be letters, digits, '_' and '-', without \"__\"");
  if (!nameChars(tool)) return refuse("the tool's name must be letters, digits, '_' and '-'");
  std::string name = "mcp__" + server + "__" + tool;
  if (name.size() > 64) return refuse("mcp__" + server + "__" + tool.substr(0, 40) + " is longer than 64 characters");
  return name;
}

}  // namespace pine::mcp
