#include "broker/policy/taint.h"

#include "common/glob.h"
#include "broker/policy/profile.h"
#include "broker/policy/routing.h"

namespace pine::policy {
namespace {

// The reason a call taints, empty when it does not.
std::string taintCause(const config::Home& home, const config::AgentConfig& agent, const std::string& tool,
                       const std::string& mcpServerGiven) {
  const std::string mcpServer = mcpServerGiven.empty() ? mcpServerOf(tool) : mcpServerGiven;
  if (!mcpServer.empty()) {
    auto it = agent.mcpServers.find(mcpServer);
    if (it != agent.mcpServers.end()) {
      const auto& s = it->second;
      if (s.bundled == "web") return "web page (MCP server '" + mcpServer + "')";
      if (s.bundled == "browser") return "web page in the browser (MCP server '" + mcpServer + "')";
      if (s.taints) return "MCP server '" + mcpServer + "', marked taints";
    }
  }
  if (tool == "download") return "downloaded file";
  for (const auto& g : home.pine.security.taintTools)
    if (globMatch(g, tool)) return "tool '" + tool + "', listed in security.taintTools ('" + g + "')";
  return {};
}

}  // namespace

bool toolTaints(const config::Home& home, const config::AgentConfig& agent, const std::string& tool,
                const std::string& mcpServer) {
  return !taintCause(home, agent, tool, mcpServer).empty();
}

bool taintAfterRun(config::TaintPolicy policy, const std::string& session, bool taintedNow) {
  if (isUntrustedSession(session)) return true;
  switch (policy) {
    case config::TaintPolicy::Session: return taintedNow;
    case config::TaintPolicy::Run: return false;
    case config::TaintPolicy::Off: return false;
  }
  return true;
}

bool toolCallMarksTaint(config::TaintPolicy policy) { return policy != config::TaintPolicy::Off; }

TaintUpdate taintFromToolCall(const config::Home& home, const config::AgentConfig& agent, const std::string& tool,
                              const std::string& mcpServer) {
  if (!toolCallMarksTaint(home.pine.security.taint)) return {};
  std::string cause = taintCause(home, agent, tool, mcpServer);
  if (cause.empty()) return {};
  return TaintUpdate{true, "read outside content (" + cause + ")"};
}

}  // namespace pine::policy
