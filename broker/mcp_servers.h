// The broker's MCP server sessions (docs/mcp.md): one per server of an agent, local (`command`),
// remote (`url`, a pine-mcp-remote) or bundled `web` (a pine-web), started through pined on first
// need (Supervisor.startMcpServer) and spoken to alike; a `bundled: commands` server has no
// process (mcp_commands.cpp). Each is initialized and listed, started again with a growing delay after it died, stopped when no
// run has used it for a while. The first tool list of a server is pinned in the store; a later
// list that differs leaves the changed and new tools disabled until the owner reviews the
// difference (pinectl mcp review). Everything a server says is outside content: its tool
// descriptions reach the model marked as such, its results capped (mcp/client.h).
#pragma once
#include <kj/async.h>
#include <kj/timer.h>

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "broker/command_start.h"
#include "broker/mcp/client.h"
#include "broker/mcp/tool_pins.h"
#include "broker/sources/program_source.h"
#include "broker/store/store.h"
#include "config/model.h"

namespace pine {

// One tool of a server as a run sees it.
struct McpTool {
  std::string server, name, modelName;  // modelName: mcp__<server>__<name>
  std::string description;              // marked as the server's words, capped
  std::string parameters;               // the input schema as JSON
  bool readOnly = false;                // annotations.readOnlyHint (the server's claim)
  bool disabled = false;                // changed or new since the owner saw the list
};

// A call's outcome: the server's result (outside content), or pine's own words why there is none.
struct McpAnswer {
  std::string text;
  bool isError = false;
  bool fromServer = false;  // text is what the server returned
};

// The limits of every server; how long one call may take and how long a server may sit idle are
// each server's own (mcpServers' timeoutSec and idleSec).
struct McpLimits {
  unsigned minRestartSec = 1, maxRestartSec = 300;
  mcp::ClientOptions client;
};

class McpServers final : private kj::TaskSet::ErrorHandler {
 public:
  using Starter = std::function<kj::Promise<sources::ProgramLink>(const std::string& agent, const std::string& server)>;
  McpServers(kj::Timer& timer, store::Store& store, Starter start, McpLimits limits = {});
  ~McpServers() noexcept(false);
  McpServers(const McpServers&) = delete;
  McpServers& operator=(const McpServers&) = delete;

  // Starts the local servers of `agent` named here that are not running (unless one is waiting out its
  // restart delay) and resolves once each listed its tools or failed. Never rejects: a server that
  // failed has no tools, and pinectl mcp says why.
  kj::Promise<void> prepare(const config::AgentConfig& agent, const std::vector<std::string>& servers);
  // The tools of a running server, disabled ones marked; none when it is not running.
  std::vector<McpTool> tools(const std::string& agent, const std::string& server) const;
  // One call of an enabled tool (by its name on the server). The result as the model reads it; an
  // error result saying why when the server failed, timed out or the tool is disabled.
  // progress gets the server's progress messages (outside content) while the call runs.
  // `conversation` goes to the bundled browser only (its _meta "pine/conversation": a browser
  // context per conversation); other servers are not told.
  kj::Promise<McpAnswer> call(const std::string& agent, const std::string& server, const std::string& tool,
                              const nlohmann::json& args, std::function<void(const std::string&)> progress = {},
                              const std::string& conversation = "");
  // How the commands of `bundled: commands` servers are started (through pined); without it they
  // answer that they do not run.
  void runCommandsWith(AgentCommandStarter start) { runCommand_ = std::move(start); }
  // pinectl mcp: every server of every agent, its state and its tools.
  nlohmann::json report(const config::Home& cfg) const;
  // pinectl mcp review SERVER: starts the server named so for each agent that has it, and answers the
  // difference between its tools now and the pinned ones; accept: the list now is pinned.
  kj::Promise<nlohmann::json> review(const config::Home& cfg, const std::string& server, bool accept);

 private:
  struct Session;
  using SessionPtr = std::shared_ptr<Session>;
  SessionPtr session(const std::string& agent, const std::string& server);
  kj::Promise<void> ensure(SessionPtr s);
  void adopt(Session& s, std::vector<mcp::ToolInfo> tools);
  void died(Session& s, const std::string& why);
  void letGo(Session& s);  // its process and client go; the session keeps its pins and state
  void relist(SessionPtr s);
  void useCommands(const std::string& agent, const config::McpServer& conf);  // mcp_commands.cpp
  kj::Promise<McpAnswer> callCommand(SessionPtr s, const std::string& tool, const nlohmann::json& args);
  void stopIdle();
  kj::Promise<void> idleLoop();
  void taskFailed(kj::Exception&& e) override;

  kj::Timer& timer_;
  store::Store& store_;
  Starter start_;
  AgentCommandStarter runCommand_;
  McpLimits limits_;
  std::map<std::string, SessionPtr> sessions_;  // by "<agent>/<server>"
  kj::TaskSet tasks_{*this};
  kj::Promise<void> idle_ = nullptr;  // idleLoop, armed anew when a server starts
};

// One server of one agent (mcp_servers.cpp; mcp_review.cpp reads it for the owner).
struct McpServers::Session {
  std::string agent, server;
  std::string state = "stopped";  // starting, running, failed, stopped
  std::string error;
  // Shared with every promise taken from it: a Client must outlive them (mcp/client.h), and a
  // session that failed lets go of it while a call may still be settling.
  std::shared_ptr<mcp::Client> client;
  std::function<kj::Promise<std::string>()> exited;
  kj::Promise<void> watch = nullptr;
  kj::Maybe<kj::ForkedPromise<void>> starting;
  std::vector<mcp::ToolInfo> tools;
  std::vector<mcp::Pin> pinned;
  mcp::PinDiff diff;
  std::set<std::string> disabled;  // by the tool's name on the server
  long long lastUsedMs = 0, retryAtMs = 0, startedMs = 0;
  unsigned idleSec = 600, callTimeoutSec = 300;  // from its configuration, at its last prepare
  std::string entry;  // what its process was started from (startedFrom): a change starts it again
  // bundled: commands: no process; its tools are the commands of its configuration
  bool commands = false;
  std::map<std::string, config::McpCommand> commandSpecs;
  bool browser = false;  // bundled: browser: told the conversation of each call
  unsigned failures = 0, generation = 0, calls = 0, starts = 0;
};

}  // namespace pine
