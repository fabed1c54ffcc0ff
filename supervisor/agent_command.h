// The runAgentCommand method of the Supervisor capability: one command of an agent's
// `bundled: commands` MCP server, started the way the agent's shell runs (agent_shell.h). The
// broker names the agent, the server, the command and the arguments; pined looks the command up
// in its own configuration and checks the arguments again with the same rules
// (config/command_tool.h) before it fills them in. At most kMaxRunning run at once per agent.
#pragma once
#include <kj/async-io.h>

#include "proto/supervisor.capnp.h"

namespace pine {

class Supervisor;

kj::Promise<void> runAgentCommand(
    Supervisor& sup, kj::AsyncIoContext& io,
    capnp::CallContext<proto::Supervisor::RunAgentCommandParams, proto::Supervisor::RunAgentCommandResults> context);

}  // namespace pine
