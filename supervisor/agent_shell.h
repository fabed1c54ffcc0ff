// Starting a command the way an agent's shell runs, for the broker: a command source's command
// (source_command.cpp) and a bundled command of an agent's MCP `commands` server
// (agent_command.cpp). The sandbox is the agent's AgentSandboxes policy (its configured
// sandbox.read/write/network, no conversation's grants), instruction files read-only as in a
// tainted run, the shell's environment (sandbox/shell_env.h), its workspace as the working
// folder, /bin/bash starting the words as words. pined never reads what the command prints: the
// read ends of its stdout and stderr go to the broker by fd passing. No sandbox, no run.
#pragma once
#include <kj/async-io.h>
#include <kj/io.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/model.h"
#include "proto/supervisor.capnp.h"
#include "supervisor/socket_carrier.h"

namespace pine {

class Supervisor;

struct ShellStart {
  std::string agent;
  std::vector<std::string> words;
  std::string label;        // "command source 'disk'": for the log and the audit's refusals
  nlohmann::json audit;     // what process.start and process.exit also say (source, server, ...)
  std::string undoTag;      // names what the tainted-run check moves aside
  int timeoutSec = 0;       // pined's own kill a little after it; 0: none (a long-running process)
  std::function<void()> exited;  // once it has been reaped
};

struct ShellStarted {
  pid_t pid = -1;
  kj::AutoCloseFd out, err;
  std::string sandbox;  // "<backend>:<mode>"
  kj::Own<proto::WorkerProcess::Server> process;  // dropped: the command and all it started are killed
};

// Throws kj::Exception(FAILED) saying why nothing runs (audited as sandbox.refused first).
[[noreturn]] void refuseShell(const ShellStart& start, const std::string& why);
ShellStarted startInAgentShell(Supervisor& sup, kj::AsyncIoContext& io, const ShellStart& start);

// Fills the results runSourceCommand and runAgentCommand share.
template <class Results>
void answerShell(Results results, ShellStarted& started) {
  results.setPid(started.pid);
  results.setSandbox(started.sandbox);
  results.setStdout(kj::heap<SocketCarrier>(started.out.release()));
  results.setStderr(kj::heap<SocketCarrier>(started.err.release()));
  results.setProcess(kj::mv(started.process));
}

}  // namespace pine
