#include "supervisor/agent_command.h"

#include <kj/debug.h>

#include <map>

#include "common/names.h"
#include "config/command_tool.h"
#include "supervisor/agent_shell.h"
#include "supervisor/supervisor.h"

namespace pine {
namespace {

constexpr int kMaxRunning = 4;  // per agent: a run cannot fan out into many commands at once

std::map<std::string, int>& runningPerAgent() {
  static std::map<std::string, int> running;
  return running;
}

}  // namespace

kj::Promise<void> runAgentCommand(
    Supervisor& sup, kj::AsyncIoContext& io,
    capnp::CallContext<proto::Supervisor::RunAgentCommandParams, proto::Supervisor::RunAgentCommandResults> context) {
  auto p = context.getParams();
  const std::string agent = p.getAgent(), server = p.getServer(), command = p.getCommand();
  KJ_REQUIRE(isValidAgentId(agent) && isValidAgentId(server) && isValidAgentId(command),
             "runAgentCommand: bad agent, server or command name");
  KJ_REQUIRE(p.getArgs().size() <= 64 * 1024, "runAgentCommand: arguments too long");
  KJ_REQUIRE(!sup.stopping(), "pined is stopping");
  auto cfg = sup.config();
  KJ_REQUIRE(cfg != nullptr, "runAgentCommand: no configuration is loaded");
  ShellStart start;
  start.agent = agent;
  start.label = "command '" + server + "/" + command + "'";
  start.audit = {{"server", server}, {"command_name", command}};
  auto a = cfg->agents.find(agent);
  const config::McpServer* entry = nullptr;
  if (a != cfg->agents.end()) {
    auto s = a->second.mcpServers.find(server);
    if (s != a->second.mcpServers.end() && s->second.bundled == "commands") entry = &s->second;
  }
  if (!entry) refuseShell(start, "agent '" + agent + "' has no 'bundled: commands' server '" + server + "'");
  auto c = entry->commands.find(command);
  if (c == entry->commands.end()) refuseShell(start, "server '" + server + "' has no command '" + command + "'");
  std::string why;
  auto words = config::commandToolWords(c->second, nlohmann::json::parse(std::string(p.getArgs()), nullptr, false), why);
  if (!words) refuseShell(start, "the arguments are not allowed: " + why);
  if (runningPerAgent()[agent] >= kMaxRunning)
    refuseShell(start, "agent '" + agent + "' already runs " + std::to_string(kMaxRunning) + " commands; wait for one");
  start.words = *words;
  start.timeoutSec = c->second.timeoutSec;
  start.undoTag = "command-" + server + "-" + command;
  start.exited = [agent]() { --runningPerAgent()[agent]; };
  ShellStarted started = startInAgentShell(sup, io, start);
  ++runningPerAgent()[agent];
  answerShell(context.getResults(), started);
  return kj::READY_NOW;
}

}  // namespace pine
