#include "broker/run_mcp.h"

#include <algorithm>

#include "broker/broker_tools.h"
#include "broker/mcp_servers.h"
#include "broker/policy/profile.h"
#include "broker/run_gate.h"
#include "common/outside_text.h"

namespace pine {
namespace {

// The run's MCP tool of that model name (enabled or not); nullopt when it is none.
std::optional<McpTool> findMcpTool(const RunContext& run, const std::string& modelName) {
  std::string server = policy::mcpServerOf(modelName);
  McpServers* mcp = run.services.mcp();
  if (server.empty() || mcp == nullptr) return std::nullopt;
  for (auto& t : mcp->tools(run.req.agent, server))
    if (t.modelName == modelName) return t;
  return std::nullopt;
}

}  // namespace

bool isMcpToolName(const std::string& tool) { return !policy::mcpServerOf(tool).empty(); }

kj::Promise<void> prepareMcpServers(RunServices& services, const config::AgentConfig& agent,
                                    const std::set<std::string>& tools) {
  McpServers* mcp = services.mcp();
  if (mcp == nullptr) return kj::READY_NOW;
  std::vector<std::string> servers;
  for (const auto& [name, conf] : agent.mcpServers)
    if (tools.count(policy::mcpToolSetName(name))) servers.push_back(name);
  if (servers.empty()) return kj::READY_NOW;
  return mcp->prepare(agent, servers);
}

std::vector<ToolSpecText> mcpToolSpecs(const RunContext& run) {
  std::vector<ToolSpecText> out;
  McpServers* mcp = run.services.mcp();
  if (mcp == nullptr) return out;
  for (const auto& [name, conf] : run.agent().mcpServers) {
    if (!run.tools.count(policy::mcpToolSetName(name))) continue;  // untrusted runs: only with untrusted.mcp
    for (auto& t : mcp->tools(run.req.agent, name))
      if (!t.disabled) out.push_back({t.modelName, t.description, t.parameters});
  }
  return out;
}

kj::Promise<RunGate::BrokerCall> RunGate::checkMcpTool(const std::string& tool, const std::string& argsJson) {
  auto args = nlohmann::json::parse(argsJson, nullptr, false);
  std::string server = policy::mcpServerOf(tool);
  policy::ToolCall call{tool, server, args.is_discarded() ? nlohmann::json(argsJson) : args, false};
  auto refuse = [&](std::string why) {
    auditDecision(call, "refused", why);
    BrokerCall c;
    c.answer = std::move(why);
    return c;
  };
  if (!run_.tools.count(policy::mcpToolSetName(server))) return refuse("'" + tool + "' is not a tool of this run");
  auto row = findMcpTool(run_, tool);
  if (!row) return refuse("MCP server '" + server + "' has no tool '" + tool + "' now (pinectl mcp shows its tools)");
  if (row->disabled)
    return refuse("'" + tool + "' changed since the owner saw it; it stays disabled until the owner runs "
                  "`pinectl mcp review " + server + "`");
  if (args.is_discarded() || !args.is_object()) return refuse("the arguments must be a JSON object");
  if (run_.breaker.tripped(tool, args)) {
    run_.stopReason = "the model repeated the same " + tool + " call; the run was stopped";
    return refuse(run_.stopReason);
  }
  call.readOnly = row->readOnly;
  return decideBrokerTool(call, policy::decideToolCall(*run_.config, run_.agent(), run_.facts(), call));
}

kj::Promise<ToolAnswer> BrokerTools::callMcp(const std::string& tool, const nlohmann::json& args) {
  McpServers* mcp = run_.services.mcp();
  auto row = findMcpTool(run_, tool);
  if (mcp == nullptr || !row) return toolError("'" + tool + "' is not a tool of this run");
  std::string server = row->server;
  // The server's progress notes reach the owner's screens as one bounded line, its controls stripped.
  auto progress = [services = &run_.services, task = run_.taskId, tool](const std::string& note) {
    size_t cut = std::min<size_t>(note.size(), 200);
    while (cut < note.size() && cut > 0 && (static_cast<unsigned char>(note[cut]) & 0xC0) == 0x80) --cut;
    std::string line = stripTerminalControls(note.substr(0, cut));
    for (char& c : line)
      if (c == '\n' || c == '\r') c = ' ';
    services->progress(task, tool + ": " + line);
  };
  return mcp->call(run_.req.agent, server, row->name, args, progress, run_.req.session).then([server, tool](McpAnswer a) {
    // Whatever a server returns may have been written by a stranger: data for the model, fenced.
    if (!a.fromServer) return ToolAnswer{a.text, a.isError};
    return ToolAnswer{fenceOutside("the result of " + tool + " (MCP server '" + server + "')", a.text), a.isError};
  });
}

}  // namespace pine
