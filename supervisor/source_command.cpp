#include "supervisor/source_command.h"

#include <kj/debug.h>

#include <set>

#include "common/names.h"
#include "config/command_line.h"
#include "supervisor/agent_shell.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

// The command sources with a process pined has not reaped yet: one each, whatever the broker
// asks (a broker that is misled must not multiply a command). pined is one process with one loop.
std::set<std::string>& runningSources() {
  static std::set<std::string> running;
  return running;
}

}  // namespace

kj::Promise<void> runSourceCommand(
    Supervisor& sup, kj::AsyncIoContext& io,
    capnp::CallContext<proto::Supervisor::RunSourceCommandParams, proto::Supervisor::RunSourceCommandResults> context) {
  const std::string name = context.getParams().getSource();
  KJ_REQUIRE(isValidAgentId(name), "runSourceCommand: bad source name");
  KJ_REQUIRE(!sup.stopping(), "pined is stopping");
  auto cfg = sup.config();
  KJ_REQUIRE(cfg != nullptr, "runSourceCommand: no configuration is loaded");
  const config::Source* source = nullptr;
  for (const auto& s : cfg->pine.sources)
    if (s.name == name && s.type == "command") source = &s;
  ShellStart start;
  start.label = "command source '" + name + "'";
  start.audit = {{"source", name}};
  if (!source) refuseShell(start, "no command source named '" + name + "' in pine.yaml");
  start.agent = config::commandAgent(*source);
  if (runningSources().count(name))
    refuseShell(start, "the command of source '" + name + "' is still running: one at a time");
  start.words = source->command;
  start.undoTag = "source-" + name;
  start.timeoutSec = source->commandMode == "lines" ? 0 : source->timeoutSec;
  start.exited = [name]() { runningSources().erase(name); };
  ShellStarted started = startInAgentShell(sup, io, start);
  runningSources().insert(name);
  answerShell(context.getResults(), started);
  return kj::READY_NOW;
}

}  // namespace pine
