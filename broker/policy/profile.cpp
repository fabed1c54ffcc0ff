#include "broker/policy/profile.h"

#include "common/tool_table.h"

namespace pine::policy {

std::string mcpToolSetName(const std::string& server) { return "mcp__" + server; }

std::string mcpServerOf(const std::string& tool) {
  if (tool.rfind("mcp__", 0) != 0) return {};
  size_t end = tool.find("__", 5);
  if (end == std::string::npos || end == 5) return {};
  return tool.substr(5, end - 5);
}

std::set<std::string> toolsForRun(const config::Home& home, const config::AgentConfig& agent, const RunContext& ctx) {
  using tooltable::Untrusted;
  std::set<std::string> owner;
  for (const auto& name : agent.tools) {
    const auto* row = tooltable::findTool(name);
    if (row == nullptr || (row->mainOnly && agent.id != "main")) continue;
    owner.insert(name);
  }
  if (home.pine.limits.maxSubAgents > 0 && !ctx.subagent) owner.insert("subagent");
  for (const auto& [name, server] : agent.mcpServers) owner.insert(mcpToolSetName(name));
  if (ctx.trust == config::Trust::Owner && !ctx.separateSubscription) return owner;

  // The reduced set: the rows every untrusted run has and those its `untrusted` widenings give,
  // never more than an owner run of the same agent has.
  const auto& u = agent.untrusted;
  auto widened = [&](Untrusted w) {
    switch (w) {
      case Untrusted::Always: return true;
      case Untrusted::Shell: return u.shell;
      case Untrusted::Write: return u.write;
      case Untrusted::PublishEvent: return u.publishEvent;
      case Untrusted::StateWrite: return u.stateWrite;
      case Untrusted::Delegate: return u.delegate;
      case Untrusted::SubAgents: return u.subAgents;
      case Untrusted::Never: return false;
    }
    return false;
  };
  std::set<std::string> out;
  for (const auto& row : tooltable::builtinTools())
    if (owner.count(row.name) && widened(row.untrusted)) out.insert(row.name);
  if (u.mcp)
    for (const auto& [name, server] : agent.mcpServers) out.insert(mcpToolSetName(name));
  return out;
}

bool builtinReadsOnly(const std::string& tool, const nlohmann::json& args) {
  const auto* row = tooltable::findTool(tool);
  return row != nullptr && tooltable::readsOnly(*row, args);
}

}  // namespace pine::policy
