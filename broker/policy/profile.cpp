#include "broker/policy/profile.h"

namespace pine::policy {

std::string mcpToolSetName(const std::string& server) { return "mcp__" + server; }

std::string mcpServerOf(const std::string& tool) {
  if (tool.rfind("mcp__", 0) != 0) return {};
  size_t end = tool.find("__", 5);
  if (end == std::string::npos || end == 5) return {};
  return tool.substr(5, end - 5);
}

std::set<std::string> toolsForRun(const config::Home& home, const config::AgentConfig& agent, const RunContext& ctx) {
  std::set<std::string> owner(agent.tools.begin(), agent.tools.end());
  if (agent.id != "main") owner.erase("create_agent");
  if (home.pine.limits.maxSubAgents > 0 && !ctx.subagent) owner.insert("subagent");
  for (const auto& [name, server] : agent.mcpServers) owner.insert(mcpToolSetName(name));
  if (ctx.trust == config::Trust::Owner && !ctx.separateSubscription) return owner;

  // The reduced set never exceeds what an owner run of the same agent has.
  std::set<std::string> out;
  auto give = [&](const char* t) {
    if (owner.count(t)) out.insert(t);
  };
  for (const char* t : {"read", "grep", "find", "ls"}) give(t);
  const auto& u = agent.untrusted;
  if (u.shell) give("bash");
  if (u.write) {
    give("write");
    give("edit");
  }
  if (u.publishEvent) give("publish_event");
  if (u.stateWrite) {
    give("state_get");
    give("state_set");
  }
  if (u.delegate) give("delegate");
  if (u.subAgents) give("subagent");
  if (u.mcp)
    for (const auto& [name, server] : agent.mcpServers) out.insert(mcpToolSetName(name));
  return out;
}

bool builtinReadsOnly(const std::string& tool, const nlohmann::json& args) {
  if (tool == "read" || tool == "grep" || tool == "find" || tool == "ls" || tool == "state_get") return true;
  if (tool != "schedules") return false;
  if (!args.is_object()) return false;
  if (!args.contains("action")) return true;
  return args["action"].is_string() && args["action"].get<std::string>() == "list";
}

}  // namespace pine::policy
