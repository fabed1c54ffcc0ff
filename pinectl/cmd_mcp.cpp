// pinectl mcp | mcp review SERVER: the agents' MCP servers, their state and tools, and the
// owner's review of a server whose tools changed since they were first seen (docs/mcp.md).
#include "pinectl/api_call.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {

namespace {

std::string mcpStr(const nlohmann::json& j, const char* key, const std::string& otherwise = "") {
  if (!j.contains(key)) return otherwise;
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

std::string mcpNames(const nlohmann::json& list) {
  std::string out;
  for (auto& n : list) out += (out.empty() ? "" : ", ") + (n.is_string() ? n.get<std::string>() : mcpStr(n, "name"));
  return out;
}

}  // namespace

int cmdMcp(const std::string& home, bool json, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "GET", "/v1/mcp");
  if (!a.ok()) return reportFailure(a, err);
  if (json) {
    out << a.body.dump(2) << "\n";
    return 0;
  }
  auto list = a.body.value("servers", nlohmann::json::array());
  if (list.empty()) out << "no MCP servers (agent.yaml: mcpServers)\n";
  for (auto& s : list) {
    out << mcpStr(s, "agent") << "/" << mcpStr(s, "server") << " (" << mcpStr(s, "kind") << (s.value("taints", false) ? ", taints" : "")
        << ", approve " << mcpStr(s, "approve") << ")  " << mcpStr(s, "state") << "\n";
    if (s.contains("error")) out << "  why: " << mcpStr(s, "error") << "\n";
    if (s.contains("retryInSec")) out << "  started again when next needed, in " << mcpStr(s, "retryInSec") << " s or later\n";
    for (auto& t : s.value("tools", nlohmann::json::array())) {
      out << "  " << mcpStr(t, "modelName", mcpStr(t, "name")) << (t.value("readOnly", false) ? "  read-only" : "");
      if (t.value("disabled", false)) out << "  DISABLED: changed since you saw it";
      if (t.contains("unusable")) out << "  unusable: " << mcpStr(t, "unusable");
      out << "\n";
    }
    auto changed = s.value("changed", nlohmann::json::array()), added = s.value("added", nlohmann::json::array()),
         removed = s.value("removed", nlohmann::json::array());
    if (!changed.empty() || !added.empty() || !removed.empty())
      out << "  its tools differ from the ones you saw: see `pinectl mcp review " << mcpStr(s, "server") << "`\n";
  }
  return 0;
}

int cmdMcpReview(const std::string& home, const std::string& server, bool json, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "POST", "/v1/mcp/" + urlEncode(server) + "/review", nlohmann::json::object());
  if (!a.ok()) return reportFailure(a, err);
  if (json) {
    out << a.body.dump(2) << "\n";
    return 0;
  }
  int status = 0;
  for (auto& r : a.body.value("reviews", nlohmann::json::array())) {
    out << mcpStr(r, "agent") << "/" << server << ": ";
    if (r.contains("error")) {
      out << "not running, nothing reviewed: " << mcpStr(r, "error") << "\n";
      status = 1;
      continue;
    }
    auto changed = r.value("changed", nlohmann::json::array()), added = r.value("added", nlohmann::json::array()),
         removed = r.value("removed", nlohmann::json::array());
    if (changed.empty() && added.empty() && removed.empty()) {
      out << "its tools are the ones you saw\n";
      continue;
    }
    out << "\n";
    for (auto& c : changed) {
      out << "  changed: " << mcpStr(c, "name") << "\n";
      for (const char* part : {"description", "schema", "annotations"})
        if (c["before"].value(part, "") != c["now"].value(part, ""))
          out << "    " << part << " was: " << mcpStr(c["before"], part) << "\n    " << part << " now: " << mcpStr(c["now"], part)
              << "\n";
    }
    for (auto& n : added) out << "  new: " << mcpStr(n, "name") << ": " << mcpStr(n["now"], "description") << "\n";
    if (!removed.empty()) out << "  gone: " << mcpNames(removed) << "\n";
    out << (r.value("accepted", false) ? "  accepted: these tools are enabled again, as they are now\n" : "");
  }
  return status;
}

}  // namespace pine
