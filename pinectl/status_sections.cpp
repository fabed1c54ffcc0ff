// What `pinectl status` shows beyond the processes: what waits for the owner (approvals), what
// brings events in (sources: running or why not), the MCP servers, and which conversation hears
// which source. One route each; a route that fails is named in its section, the rest still shows.
#include <map>

#include "pinectl/api_call.h"
#include "pinectl/commands.h"

namespace pine {
namespace {

void approvalsSection(const nlohmann::json& list, std::ostream& out) {
  out << "\n" << list.size() << (list.size() == 1 ? " approval waits" : " approvals wait") << " for you\n";
  for (auto& a : list) out << "  " << formatApproval(a);
}

void sourcesSection(const nlohmann::json& list, std::ostream& out) {
  out << "\nsources\n";
  if (list.empty()) out << "  none (pine.yaml: sources, webhooks)\n";
  for (auto& s : list) {
    out << "  " << shownField(s, "name") << " (" << shownField(s, "type") << ")  " << shownField(s, "state");
    if (s.contains("why")) out << ": " << shownField(s, "why");
    out << "; last event " << shownField(s, "lastEventAt", "never");
    if (s.value("errors", 0) > 0) {
      // With its time, and whether the source has looked since: an old error is not a present one.
      out << "; " << shownField(s, "errors") << " errors, last at " << shownField(s, "lastErrorAt") << ": "
          << shownField(s, "lastError");
      if (s.contains("lastLookAt") && s.value("lastLookAt", "") > s.value("lastErrorAt", ""))
        out << " (looked again since, at " << shownField(s, "lastLookAt") << ")";
    }
    out << "\n";
  }
}

void mcpSection(const nlohmann::json& list, std::ostream& out) {
  if (list.empty()) return;
  out << "\nMCP servers\n";
  for (auto& s : list) {
    out << "  " << shownField(s, "agent") << "/" << shownField(s, "server") << " (" << shownField(s, "kind") << ")  " << shownField(s, "state");
    if (s.contains("error")) out << ": " << shownField(s, "error");
    if (s.contains("tools") && s["tools"].is_array()) out << "; " << s["tools"].size() << " tools";
    out << "\n";
  }
}

void subscriptionsSection(const nlohmann::json& list, std::ostream& out) {
  if (list.empty()) return;
  out << "\nconversations and what they hear\n";
  std::map<std::string, std::string> heard;  // agent/session -> sources
  for (auto& s : list) {
    std::string& line = heard[shownField(s, "agent") + "/" + shownField(s, "session")];
    line += (line.empty() ? "" : ", ") + shownField(s, "source") + (s.contains("topic") ? " (" + shownField(s, "topic") + ")" : "") +
            (s.value("separate", false) ? " (runs of their own)" : "");
  }
  for (auto& [conversation, sources] : heard) out << "  " << conversation << ": " << sources << "\n";
}

}  // namespace

void addStatusSections(const std::string& home, nlohmann::json& status, std::ostream* out) {
  struct Part {
    const char* route;
    const char* key;
    void (*print)(const nlohmann::json&, std::ostream&);
  };
  static const Part parts[] = {{"/v1/approvals", "approvals", approvalsSection},
                               {"/v1/sources", "sources", sourcesSection},
                               {"/v1/mcp", "servers", mcpSection},
                               {"/v1/subscriptions", "subscriptions", subscriptionsSection}};
  for (const Part& p : parts) {
    auto a = callApi(home, "GET", p.route);
    const std::string name = std::string(p.route).substr(4);  // "approvals", "sources", "mcp", ...
    if (!a.ok()) {
      status["unavailable"][name] = a.body.is_object() ? a.body.value("error", "HTTP " + std::to_string(a.status))
                                                       : "HTTP " + std::to_string(a.status);
      if (out) *out << "\n" << name << ": cannot read (" << shownField(status["unavailable"], name.c_str()) << ")\n";
      continue;
    }
    auto list = a.body.value(p.key, nlohmann::json::array());
    status[name] = list;
    if (out) p.print(list, *out);
  }
}

}  // namespace pine
