// The owner's view of MCP servers (pinectl mcp, docs/api.md): their state and tools, and the
// review that accepts a changed tool list.
#include "broker/mcp_servers.h"
#include "broker/owner_api.h"

namespace pine {

kj::Promise<ApiReply> OwnerApi::mcpServers() {
  if (p_.mcp == nullptr) return apiError(404, "this broker runs no MCP servers");
  return ApiReply{200, p_.mcp->report(*p_.config)};
}

kj::Promise<ApiReply> OwnerApi::mcpReview(const std::string& server, bool accept) {
  if (p_.mcp == nullptr) return apiError(404, "this broker runs no MCP servers");
  bool known = false;
  for (const auto& [id, agent] : p_.config->agents) {
    auto it = agent.mcpServers.find(server);
    known = known || (it != agent.mcpServers.end() && (!it->second.command.empty() || !it->second.url.empty() || it->second.bundled == "web"));
  }
  if (!known)
    return apiError(404, "no local or remote MCP server '" + server + "' in any agent's mcpServers (pinectl mcp lists them)");
  return p_.mcp->review(*p_.config, server, accept).then([](nlohmann::json j) { return ApiReply{200, std::move(j)}; });
}

}  // namespace pine
