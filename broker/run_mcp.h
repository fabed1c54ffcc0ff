// MCP tools as rows of a run's tool table (docs/mcp.md): the tools of the servers in the run's
// profile ("mcp__<server>" tool sets, policy/profile.h) are handed to the worker as broker-side
// tools named mcp__<server>__<tool>; a call is decided by the same rules as every other call
// (RunGate::checkMcpTool: taints, approve, readOnly, untrusted runs) and carried out by the
// broker's session with the server (mcp_servers.h). Results are outside content.
#pragma once
#include <kj/async.h>

#include <set>
#include <string>
#include <vector>

#include "broker/run_context.h"
#include "broker/worker_link.h"

namespace pine {

// The local MCP servers a run's profile names, started and listed before its worker starts.
kj::Promise<void> prepareMcpServers(RunServices& services, const config::AgentConfig& agent,
                                    const std::set<std::string>& tools);
// The enabled MCP tools of a run, as the worker hands them to its model.
std::vector<ToolSpecText> mcpToolSpecs(const RunContext& run);
// "mcp__<server>__<tool>" as a tool of the run: its server and its name there; false when it is none.
bool isMcpToolName(const std::string& tool);

}  // namespace pine
