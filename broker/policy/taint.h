// Taint (layer 4): which tool results count as outside content, and what a
// session keeps of it after a run.
#pragma once
#include <string>

#include "config/model.h"

namespace pine::policy {

// True when a call of `tool` (full name; MCP tools "mcp__<server>__<tool>")
// returns outside content: its MCP server is marked `taints` or is the bundled
// web or browser; the full name matches a `security.taintTools` glob; or it is
// `download`.
bool toolTaints(const config::Home& home, const config::AgentConfig& agent, const std::string& tool,
                const std::string& mcpServer);

struct TaintUpdate {
  bool tainted = false;
  std::string reason;
};

// The session's taint after a run ends. session: stays as it is; run: cleared;
// off: never set. An untrusted session ("<agent>~u") is tainted in every setting.
bool taintAfterRun(config::TaintPolicy policy, const std::string& session, bool taintedNow);

// Whether a tool call can mark a session at all (false for "off").
bool toolCallMarksTaint(config::TaintPolicy policy);

// What one tool call does to the session's taint: `tainted` true with a reason
// an owner understands when it marks the session ("read outside content
// (MCP server 'web')"), else false.
TaintUpdate taintFromToolCall(const config::Home& home, const config::AgentConfig& agent, const std::string& tool,
                              const std::string& mcpServer);

}  // namespace pine::policy
