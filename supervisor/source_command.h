// The runSourceCommand method of the Supervisor capability: the command of a `type: command`
// source started in the sandbox of the agent it belongs to (main's for a source of all agents),
// built as that agent's shell gets it: the same AgentSandboxes policy (its configured
// sandbox.read/write/network, no conversation's grants), instruction files read-only as in a
// tainted run, the shell's environment (sandbox/shell_env.h), its workspace as the working
// folder, /bin/bash starting the configured words. The broker names the source; the command
// line, the agent and the time limit come from pined's configuration. pined never reads what the
// command prints: the read ends of its stdout and stderr go to the broker by fd passing.
#pragma once
#include <kj/async-io.h>

#include "proto/supervisor.capnp.h"

namespace pine {

class Supervisor;

kj::Promise<void> runSourceCommand(
    Supervisor& sup, kj::AsyncIoContext& io,
    capnp::CallContext<proto::Supervisor::RunSourceCommandParams, proto::Supervisor::RunSourceCommandResults> context);

}  // namespace pine
