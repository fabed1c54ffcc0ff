// Approvals (layer 4 and "Modes"): whether a tool call goes ahead, waits for
// the owner, or is refused.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/policy/verdict.h"
#include "config/model.h"

namespace pine::policy {

struct ToolCall {
  std::string tool;    // as the model called it; MCP tools "mcp__<server>__<tool>" (the bare tool name also works when `server` is set)
  std::string server;  // MCP server name, empty for built-in tools (derived from `tool` when empty)
  nlohmann::json args;
  bool readOnly = false;  // the MCP server declares this tool read-only (readOnlyHint); ignored for built-in tools
};

// What the `approve` patterns' "tool:subject" part looks at: bash: args.command;
// send: args.to; publish_event: args.topic; delegate: args.agent; else "".
// A non-string value is given as its JSON text, so patterns still see it.
std::string callSubject(const ToolCall& call);

// "toolglob" or "toolglob:subjectglob" ('*' is any run of characters, whole
// strings match, linear time). The tool part is matched against the full tool
// name ("mcp__calendar__delete_event").
bool approvePatternMatches(std::string_view pattern, const ToolCall& call);

struct AlwaysAnswer {
  std::string scope;  // "tool:bash" or "mcp:calendar"
  bool givenWhileTainted = false;
};

// "mcp:<server>" for an MCP tool, else "tool:<tool>".
std::string alwaysScope(const ToolCall& call);

struct SessionFacts {
  config::Mode configuredMode = config::Mode::Auto;  // Home::effectiveMode(agent)
  std::optional<config::Mode> modeOverride;          // /mode, `pine mode` while running
  bool tainted = false;
  std::string taintReason;  // what made it tainted, in words ("web page"); shown in reasons
  bool untrustedRun = false;  // a run with the reduced tool set (untrusted event, separate subscription)
  bool bypassAnyway = false;  // the owner chose "bypass in this conversation anyway"
  bool bypassWhenTainted = false;  // security.bypassWhenTainted
  std::vector<AlwaysAnswer> always;
  config::Network shellNetwork = config::Network::None;  // sandbox.network plus grants of this conversation
  bool networkGrantedWhileTainted = false;  // counts as "always" for the shell and downloads
  bool mainConversation = true;  // the agent's main conversation (not a side one)
  // A conversation with the owner: the owner's own message, or a sub-agent working on it; not a run
  // started by a schedule, an event or another agent (RunContext::withOwner). False unless said.
  bool withOwner = false;
};

// The mode that applies. Untrusted runs: auto. Bypass is paused (auto, and
// *bypassPaused set) in a tainted session unless bypassWhenTainted or
// bypassAnyway.
config::Mode effectiveMode(const SessionFacts& facts, bool* bypassPaused = nullptr);

// The rules, in this order:
//  1. refused: a tool this run does not have (toolsForRun), an MCP tool whose
//     name names another server than the one given;
//  2. setup tools decide by their own rules (subscribe, create_agent,
//     request_access; add_mcp_server and add_source_type ask in every mode;
//     schedules, add_skill, add_source ask here: call their decide* with
//     the details instead);
//  3. effective bypass: allowed;
//  4. an `approve` pattern, or an MCP server with approve: always: asked, no "always";
//  5. read-only tools (read grep find ls state_get, read-only MCP tools): allowed;
//  6. download: refused without web tools, an MCP origin or network;
//  7. tainted (auto and manual): asked for approveWhenTainted, send, MCP servers
//     with approve: tainted, the shell with network or without sandbox, a download
//     over the conversation's network, delegate to an agent that reaches the
//     internet; an "always" answer covers it only if given while tainted;
//     network granted while tainted covers the shell and downloads;
//  8. manual: asked unless an "always" answer covers it;
//  9. allowed.
Verdict decideToolCall(const config::Home& home, const config::AgentConfig& agent, const SessionFacts& facts,
                       const ToolCall& call);

// Whether an "always" answer for `scope` counts in this session (a yes given
// while clean does not count once tainted).
bool alwaysCovers(const SessionFacts& facts, const std::string& scope);

// "the conversation has read outside content (web page)", or "the run was
// started by outside content" for a reduced run: the taint part of reasons.
std::string taintWords(const SessionFacts& facts);

// Whether `agent` can reach the internet (web or browser tools, sandbox network
// all, or a shell without sandbox).
bool reachesInternet(const config::AgentConfig& agent);

}  // namespace pine::policy
