// pined's share of a bundled `browser` MCP server (docs/mcp.md): pine-browser started by exec
// (through pine-launch) in a sandbox of its own (sandbox::browserPolicy: the egress one plus
// what Chromium's own sandbox needs), as the agent's own uid when pined is root; its job (the
// entry's allowHosts, denyHosts, allowPrivate, Chromium's path, its folders) written as the
// first line on its socket, then that socket handed to the broker, which speaks MCP on it.
// No secret is involved.
#pragma once
#include <kj/async-io.h>

#include <string>

#include "config/model.h"
#include "supervisor/owner_program.h"

namespace pine {

class Supervisor;

// Chromium's program: Debian's /usr/lib/chromium/chromium (not /usr/bin/chromium, a shell
// script), or another common place; empty when none is installed.
std::string findChromium();

// Throws std::runtime_error saying why the server could not be started.
StartedProgram startBrowserServer(Supervisor& sup, const std::string& agent, const config::McpServer& s);

}  // namespace pine
