// pined's share of a local MCP server (docs/mcp.md): the `command` of an agent's mcpServers
// entry, the owner's program, started with pine's rights (no sandbox: seed layer 6) through
// owner_program.h, with its `env` and the ${secret:NAME} placeholders there filled in here, in
// pined, the one process that holds .env. The broker names the agent and the server, nothing more.
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

// `value` with its ${secret:NAME} placeholders filled in by `secret`; nullopt, and the first NAME
// that has no value in `missing`, when one is not there. `used` gets each value filled in.
std::optional<std::string> mcpFillSecrets(const std::string& value,
                                          const std::function<std::optional<std::string>(const std::string&)>& secret,
                                          std::string& missing, std::vector<std::string>* used = nullptr);

// The server's environment entries NAME=value with secrets filled in by `secret`; nullopt and why
// when a secret is not in .env or a value holds a NUL or a line break.
std::optional<std::vector<std::string>> mcpServerEnv(
    const std::map<std::string, std::string>& env,
    const std::function<std::optional<std::string>(const std::string&)>& secret, std::string& why);

// argv[0] made absolute: relative to pine's home when it holds a '/', else looked up in the
// minimal PATH the server gets. Empty and why when there is no such program.
std::string mcpServerProgram(const std::string& command0, const std::string& home, std::string& why);

// Throws std::runtime_error saying why the server could not be started.
StartedProgram startMcpServer(Supervisor& sup, kj::AsyncIoContext& io, const std::string& agent,
                              const std::string& server);

}  // namespace pine
