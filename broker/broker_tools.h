// The tools the broker carries out for a run, once its gate allowed the call: the
// broker-side rows of the tool table (events, state, messages to the owner, delegation and
// sub-agents, subscriptions, access grants), and the setup tools (setup_tools.cpp: schedules
// create, add_skill, add_source, add_source_type, add_mcp_server, create_agent) whose configuration
// pined writes. Touches only
// what RunServices offers: the event bus and state, the sessions' grants and taint, other
// runs, and pined.
#pragma once
#include <kj/async.h>

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "broker/policy/setup_rules.h"
#include "broker/run_context.h"
#include "broker/worker_link.h"

namespace pine {

// A tool result that is an error (the model reads it and decides what to do next).
inline ToolAnswer toolError(std::string text) { return ToolAnswer{std::move(text), true}; }

// Tools the broker carries out (the rest run in the worker): broker-side rows of the tool table.
bool isBrokerTool(const std::string& name);

class BrokerTools {
 public:
  explicit BrokerTools(RunContext& run) : run_(run) {}

  // Whether there is a handler for `tool` (tests check every broker-side row has one).
  static bool carriesOut(const std::string& tool);
  kj::Promise<ToolAnswer> carryOut(const std::string& tool, const nlohmann::json& args);

 private:
  using Handler = kj::Promise<ToolAnswer> (*)(BrokerTools&, const nlohmann::json&);
  static const std::map<std::string, Handler>& handlers();
  kj::Promise<ToolAnswer> publishEvent(const nlohmann::json& args);
  kj::Promise<ToolAnswer> send(const nlohmann::json& args);
  kj::Promise<ToolAnswer> stateSet(const nlohmann::json& args);
  kj::Promise<ToolAnswer> delegate(const nlohmann::json& args);
  kj::Promise<ToolAnswer> subagent(const nlohmann::json& args);
  ToolAnswer stateGet(const nlohmann::json& args);
  ToolAnswer subscribe(const nlohmann::json& args);
  ToolAnswer schedulesList();
  kj::Promise<ToolAnswer> requestAccess(const nlohmann::json& args);
  // setup_tools.cpp: configuration written through pined.
  kj::Promise<ToolAnswer> scheduleCreate(const nlohmann::json& args);
  kj::Promise<ToolAnswer> addSkill(const nlohmann::json& args);
  kj::Promise<ToolAnswer> createAgent(const nlohmann::json& args);
  kj::Promise<ToolAnswer> addSource(const nlohmann::json& args);
  kj::Promise<ToolAnswer> addSourceType(const nlohmann::json& args);  // source_type_tool.cpp
  kj::Promise<ToolAnswer> addMcpServer(const nlohmann::json& args);   // mcp_server_tool.cpp
  kj::Promise<ToolAnswer> callMcp(const std::string& tool, const nlohmann::json& args);  // run_mcp.cpp
  // Asks pined to write one configuration file: nullopt, or why it refused.
  kj::Promise<std::optional<std::string>> changeConfig(const std::string& path, const std::string& content,
                                                       const std::string& reason);
  // Appends `entry` to the pine.yaml list `list` through changeConfig: nullopt, or why not.
  kj::Promise<std::optional<std::string>> addToPineYaml(const std::string& list, const nlohmann::json& entry,
                                                        const std::string& reason);

  RunContext& run_;
};

// setup_tools.cpp. What a setup tool is given, checked before anyone is asked: the owner never
// approves a call that cannot be carried out. nullopt when fine, else what is wrong.
std::optional<std::string> checkSetupArgs(const RunContext& run, const std::string& tool, const nlohmann::json& args);
// source_type_tool.cpp: add_source_type's arguments (name, path), checked before pined is asked.
std::optional<std::string> checkSourceTypeArgs(const RunContext& run, const nlohmann::json& args);
// mcp_server_tool.cpp: add_mcp_server's arguments (name, url, approve), checked before the owner is asked.
std::optional<std::string> checkMcpServerArgs(const RunContext& run, const nlohmann::json& args);
// What add_source's decision looks at (policy/setup_rules.h).
policy::AddSourceRequest addSourceRequest(const RunContext& run, const nlohmann::json& args);

}  // namespace pine
