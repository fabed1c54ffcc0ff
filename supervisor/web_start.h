// pined's share of a bundled `web` MCP server (docs/mcp.md): pine-web started by exec (through
// pine-launch) inside the egress sandbox (network; no home, no .env, nothing written), its job
// (the entry's allowHosts, denyHosts, allowPrivate, and for search the URL and the key's value
// from .env) written as the first line on its socket, then that socket handed to the broker,
// which speaks MCP on it. The job never goes in argv, the environment or the log.
#pragma once
#include <kj/async-io.h>

#include <optional>
#include <string>

#include "config/model.h"
#include "supervisor/owner_program.h"
#include "supervisor/secrets/secret_store.h"
#include "web/job/web_job.h"

namespace pine {

class Supervisor;

// The job for server `s` of `agent`; error text naming what is missing and how to fix it (never
// a value) when the search key is not in .env.
std::optional<std::string> webJobFor(const std::string& agent, const config::McpServer& s,
                                     const secrets::SecretStore& store, web::WebJob& job);

// Throws std::runtime_error saying why the server could not be started.
StartedProgram startWebServer(Supervisor& sup, kj::AsyncIoContext& io, const std::string& agent,
                              const config::McpServer& s);

}  // namespace pine
