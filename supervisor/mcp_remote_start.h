// pined's share of a remote MCP server (an mcpServers entry with `url`, docs/mcp.md): it fills in
// the ${secret:NAME} placeholders of the entry's headers from .env, starts pine-mcp-remote by exec
// in the egress sandbox (network, no home, no .env), writes the job on the socketpair and gives
// the other end to the broker, which speaks MCP's stdio framing on it. pined reads no byte of the
// server's.
#pragma once
#include <kj/async-io.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/model.h"
#include "supervisor/owner_program.h"

namespace pine {

class Supervisor;

// The headers with their secrets filled in; nullopt and why (naming the header and the secret,
// never a value) when a secret is not in .env or a value would hold CR, LF or NUL. `used` gets
// the secrets' values.
std::optional<std::map<std::string, std::string>> mcpRemoteHeaders(
    const std::map<std::string, std::string>& headers,
    const std::function<std::optional<std::string>(const std::string&)>& secret, std::string& why,
    std::vector<std::string>* used = nullptr);

// Throws std::runtime_error saying why the connector could not be started.
StartedProgram startMcpRemote(Supervisor& sup, kj::AsyncIoContext& io, const std::string& agent,
                              const std::string& server, const config::McpServer& entry);

}  // namespace pine
