// Which tools a run's worker is given at all. A tool not in this set is not
// registered in the worker: absent, not refused.
#pragma once
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "config/model.h"

namespace pine::policy {

struct RunContext {
  config::Trust trust = config::Trust::Owner;
  bool subagent = false;              // a sub-agent of a conversation: no sub-agents of its own
  bool separateSubscription = false;  // an event of a "separate: true" subscription: the reduced set
};

// Owner runs: the agent's `tools` (create_agent only for the agent "main"),
// "subagent" when limits.maxSubAgents > 0, and "mcp__<server>" for each of its
// MCP servers. Untrusted runs and separate subscriptions: read, grep, find, ls,
// plus the agent's `untrusted` widenings (shell: bash; write: write, edit;
// publishEvent: publish_event; stateWrite: state_get, state_set; delegate;
// subAgents: subagent; mcp: its servers), each only if an owner run of the
// agent would have it. Never for them: subscribe, schedules, request_access,
// add_skill, add_source, add_source_type, add_mcp_server, create_agent,
// download, send.
std::set<std::string> toolsForRun(const config::Home& home, const config::AgentConfig& agent, const RunContext& ctx);

// The one answer to "does this built-in call only read?": read, grep, find, ls, state_get, and
// schedules when it lists (action "list" or absent). Approvals let such calls pass in every mode;
// MCP tools answer by their own hints instead (approvals.h, ToolCall::readOnly).
bool builtinReadsOnly(const std::string& tool, const nlohmann::json& args);

// "mcp__<server>": how an MCP server appears in a tool set.
std::string mcpToolSetName(const std::string& server);
// The server of an MCP tool name "mcp__<server>__<tool>" (up to the first "__"
// after the prefix), or "" for any other name.
std::string mcpServerOf(const std::string& tool);

}  // namespace pine::policy
