// Configuration literals for the policy tables: no files, only structs.
#pragma once
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "broker/policy/approval_rules.h"
#include "config/model.h"

namespace policy_test {

using namespace pine;
using config::Mode;
using config::Network;
using config::Trust;
using policy::Decision;

inline config::AgentConfig agent(const std::string& id, std::vector<std::string> tools = config::defaultTools()) {
  config::AgentConfig a;
  a.id = id;
  a.tools = std::move(tools);
  return a;
}

inline config::McpServer server(const std::string& name) {
  config::McpServer s;
  s.name = name;
  return s;
}

inline config::Home home(std::vector<config::AgentConfig> agents) {
  config::Home h;
  for (auto& a : agents) h.agents[a.id] = a;
  return h;
}

inline policy::ToolCall call(const std::string& tool, nlohmann::json args = nlohmann::json::object(),
                             const std::string& server = "") {
  policy::ToolCall c;
  c.tool = tool;
  c.server = server;
  c.args = std::move(args);
  return c;
}

inline const char* decisionName(Decision d) {
  return d == Decision::Allow ? "allow" : d == Decision::Ask ? "ask" : "refuse";
}

}  // namespace policy_test
