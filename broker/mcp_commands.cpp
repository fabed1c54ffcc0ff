// The `bundled: commands` MCP server of an agent (docs/mcp.md): no process of its own. Its tools
// are the commands the owner wrote in agent.yaml; a call's arguments are checked here (before
// pined checks them again, config/command_tool.h), the command runs in the agent's sandbox like
// its shell (Supervisor.runAgentCommand), and its output comes back bounded: the head of stdout,
// the end of stderr, the exit status, killed past the command's timeoutSec.
#include <fmt/format.h>

#include "broker/mcp_servers.h"
#include "broker/sources/command_run.h"
#include "common/log.h"
#include "common/outside_text.h"
#include "config/command_tool.h"

namespace pine {
namespace {

constexpr size_t kStdoutBytes = 64u << 10;
constexpr size_t kStderrBytes = 4096;

std::string resultText(const sources::FinishedCommand& f, int timeoutSec) {
  std::string head = f.timedOut ? fmt::format("killed after its time limit of {} s", timeoutSec)
                     : f.exit.signaled ? sources::describeExit(f.exit)
                                       : fmt::format("exit code {}", f.exit.code);
  std::string text = head + "\n" + stripTerminalControls(f.out);
  if (f.outTotal > f.out.size())
    text += fmt::format("\n[output cut: the first {} of {} bytes]", f.out.size(), f.outTotal);
  if (!f.errTail.empty()) text += "\n[the end of its stderr]\n" + stripTerminalControls(f.errTail);
  return text;
}

}  // namespace

void McpServers::useCommands(const std::string& agent, const config::McpServer& conf) {
  auto s = session(agent, conf.name);
  s->commands = true;
  s->commandSpecs = conf.commands;
  s->state = "running";
  s->lastUsedMs = nowMs();
  s->tools.clear();
  for (const auto& [name, spec] : conf.commands) {
    mcp::ToolInfo t;
    t.name = name;
    t.description = spec.description;
    t.inputSchema = config::commandToolSchema(spec);
    t.readOnlyHint = spec.readOnly;
    s->tools.push_back(std::move(t));
  }
}

kj::Promise<McpAnswer> McpServers::callCommand(SessionPtr s, const std::string& tool, const nlohmann::json& args) {
  auto fail = [&](const std::string& why) { return McpAnswer{"'" + s->server + "': " + why, true, false}; };
  auto spec = s->commandSpecs.find(tool);
  if (spec == s->commandSpecs.end()) return fail("there is no command '" + tool + "'");
  if (!runCommand_) return fail("commands do not run here");
  std::string why;
  if (!config::commandToolWords(spec->second, args, why)) return fail("not run: " + why);
  ++s->calls;
  auto done = kj::defer([s]() {
    --s->calls;
    s->lastUsedMs = nowMs();
  });
  sources::RunBounds bounds;
  bounds.timeoutSec = spec->second.timeoutSec;
  bounds.maxStdoutBytes = kStdoutBytes;
  bounds.stderrTailBytes = kStderrBytes;
  const int timeoutSec = bounds.timeoutSec;
  return runCommand_(s->agent, s->server, tool, args.dump())
      .then([this, bounds](sources::StartedCommand c) { return sources::runToEnd(timer_, kj::mv(c), bounds); })
      .then(
          [timeoutSec](sources::FinishedCommand f) {
            const bool failed = f.timedOut || f.exit.signaled || f.exit.code != 0;
            return McpAnswer{resultText(f, timeoutSec), failed, true};
          },
          [server = s->server](kj::Exception&& e) {
            return McpAnswer{"'" + server + "': the command was not run: " + std::string(e.getDescription().cStr()),
                             true, false};
          })
      .attach(kj::mv(done));
}

}  // namespace pine
