// The tool table: every tool an agent can be given is one row here, as OpenSSH keeps
// every request of its unprivileged side in one table. The configuration's known tools,
// the trust profiles, the approval rules, the broker's dispatch and what the worker is
// told about its own tools all read these rows, so they cannot disagree. MCP tools are
// rows made at run time (`mcp__<server>__<tool>`) by the code that lists a server's tools.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pine::tooltable {

// Who carries a call out once the broker has allowed it.
enum class Side {
  Worker,  // the worker, inside its sandbox (file tools, the shell, writing a download)
  Broker,  // the broker (events, state, messages, delegation, setup requests)
  Pined,   // pined, asked by the broker (configuration writes, fetches); the broker relays
};

// Whether a call only reads. Reading never waits for the owner.
enum class Reads {
  Never,
  Always,
  WhenListing,  // `action` absent or "list" (schedules)
};

// How the broker decides a call (broker/policy/approval_rules.cpp, in this order).
enum class Decide {
  Rules,          // the general rules: bypass, approve lists, reading is free, taint, mode
  Subscribe,      // clean: allowed; tainted: asked (layer 4)
  RequestAccess,  // the owner decides every grant
  CreateAgent,    // asked in every mode; main only
  AddMcpServer,   // asked in every mode: a server runs with the owner's rights
  AddSourceType,  // main only, refused when tainted, else asked: a source type is a program
  OwnerConfirms,  // configuration changes the owner confirms (add_skill, add_source, schedules create)
  Fetch,          // decided when its capability fetches (download), by the download rule
};

// Which widening of an agent's `untrusted` profile gives the tool to a run started by
// outside content (always only if an owner run of the same agent would have it).
enum class Untrusted {
  Always,        // read, grep, find, ls
  Shell,         // untrusted.shell
  Write,         // untrusted.write
  PublishEvent,  // untrusted.publishEvent
  StateWrite,    // untrusted.stateWrite
  Delegate,      // untrusted.delegate
  SubAgents,     // untrusted.subAgents
  Never,
};

struct Tool {
  std::string name;
  Side side = Side::Broker;
  Reads reads = Reads::Never;
  bool outside = false;        // its result is outside content by itself (the session is tainted)
  Untrusted untrusted = Untrusted::Never;
  bool byDefault = false;      // in an agent's tools when its agent.yaml names none
  bool configurable = true;    // may be named in agent.yaml `tools` (false: given by pine.yaml limits)
  bool mainOnly = false;       // only the agent "main" has it
  bool carriedOut = true;      // false: configuration may name it, but no run is given it yet
  Decide decide = Decide::Rules;
  std::string description;     // what the model is told
  nlohmann::json parameters;   // JSON Schema of the arguments (an object)
};

// The built-in rows, in the order the model is shown them.
const std::vector<Tool>& builtinTools();
// The built-in row of that name, or null.
const Tool* findTool(std::string_view name);

// Whether this call of `tool` only reads (Reads::WhenListing looks at args.action).
bool readsOnly(const Tool& tool, const nlohmann::json& args);

// The model-facing spec {"name", "description", "parameters"}.
nlohmann::json specOf(const Tool& tool);

// Checks `args` against a tool's JSON Schema as the table writes them: an object, the
// required keys present, no unknown keys where additionalProperties is false, each value
// of its declared type (string, boolean, integer, object, array) and within its minimum.
// nullopt when fine, else what to fix, starting with "<tool>: ". Never throws.
std::optional<std::string> checkArguments(const std::string& tool, const nlohmann::json& parameters,
                                          const nlohmann::json& args);

}  // namespace pine::tooltable
