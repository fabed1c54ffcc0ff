// How the broker asks pined to run a command source's command (Supervisor.runSourceCommand)
// or a bundled command (runAgentCommand):
// it names the source and gets back the read ends of the command's stdout and stderr and a
// handle to wait for it or kill it. What runs, as whom and in which sandbox is pined's to decide.
#pragma once
#include <kj/async-io.h>

#include "broker/sources/command_source.h"
#include "proto/supervisor.capnp.h"

namespace pine {

sources::CommandStarter commandStarter(kj::AsyncIoContext& io, proto::Supervisor::Client supervisor);

// The same for one command of an agent's `bundled: commands` MCP server (Supervisor.runAgentCommand):
// the broker names agent, server, command and the arguments (a JSON object); pined checks them again.
using AgentCommandStarter = std::function<kj::Promise<sources::StartedCommand>(
    const std::string& agent, const std::string& server, const std::string& command, const std::string& args)>;
AgentCommandStarter agentCommandStarter(kj::AsyncIoContext& io, proto::Supervisor::Client supervisor);

}  // namespace pine
