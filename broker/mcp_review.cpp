// The owner's view of the MCP sessions: their state and tools (pinectl mcp), and the review
// that shows how a server's tools changed since they were pinned and accepts the change.
#include <kj/vector.h>

#include <algorithm>

#include "broker/mcp_servers.h"
#include "config/command_line.h"
#include "common/log.h"

namespace pine {
namespace {

nlohmann::json pinJson(const mcp::Pin& p) {
  return {{"description", p.description}, {"schema", p.schema}, {"annotations", p.annotations}, {"hash", p.hash}};
}

}  // namespace

nlohmann::json McpServers::report(const config::Home& cfg) const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [agentId, agent] : cfg.agents)
    for (const auto& [name, conf] : agent.mcpServers) {
      nlohmann::json j = {{"agent", agentId}, {"server", name}};
      j["kind"] = !conf.command.empty() ? "local" : !conf.url.empty() ? "remote" : "bundled " + conf.bundled;
      j["taints"] = conf.taints;
      j["approve"] = config::enumName(conf.approve);
      j["readOnly"] = conf.readOnly;
      auto it = sessions_.find(agentId + "/" + name);
      if (conf.bundled == "commands") {
        j["state"] = "ready";  // no process: each call runs its command in the agent's sandbox
        nlohmann::json tools = nlohmann::json::array();
        for (const auto& [cmd, spec] : conf.commands)
          tools.push_back({{"name", cmd}, {"readOnly", spec.readOnly || conf.readOnly}, {"disabled", false},
                           {"modelName", "mcp__" + name + "__" + cmd}, {"command", config::shownCommandLine(spec.words)}});
        j["tools"] = tools;
      } else if (conf.command.empty() && conf.url.empty() && conf.bundled != "web" && conf.bundled != "browser") {
        j["state"] = "unsupported";
        j["error"] = "only local (command) and remote (url) servers, the bundled web and browser servers and commands run in this version of pine";
      } else if (it == sessions_.end()) {
        j["state"] = "stopped";
      } else {
        const Session& s = *it->second;
        j["state"] = s.state;
        if (!s.error.empty()) j["error"] = s.error;
        if (s.state == "failed") j["retryInSec"] = std::max(0LL, (s.retryAtMs - nowMs() + 999) / 1000);
        j["starts"] = s.starts;
        nlohmann::json tools = nlohmann::json::array();
        for (const auto& t : s.tools) {
          std::string why;
          auto model = mcp::modelToolName(name, t.name, &why);
          nlohmann::json tj = {{"name", t.name}, {"readOnly", t.readOnlyHint || conf.readOnly},
                               {"disabled", s.disabled.count(t.name) > 0}};
          if (model) tj["modelName"] = *model;
          else tj["unusable"] = why;
          tools.push_back(tj);
        }
        j["tools"] = tools;
        j["changed"] = s.diff.changed;
        j["added"] = s.diff.added;
        j["removed"] = s.diff.removed;
      }
      list.push_back(j);
    }
  return {{"servers", list}};
}

kj::Promise<nlohmann::json> McpServers::review(const config::Home& cfg, const std::string& server, bool accept) {
  kj::Vector<kj::Promise<void>> all;
  std::vector<SessionPtr> found;
  for (const auto& [agentId, agent] : cfg.agents) {
    auto it = agent.mcpServers.find(server);
    if (it == agent.mcpServers.end() || (it->second.command.empty() && it->second.url.empty() && it->second.bundled != "web")) continue;
    auto s = session(agentId, server);
    s->lastUsedMs = nowMs();
    if (s->state == "failed") s->retryAtMs = 0;  // the owner asks now: no waiting out the delay
    found.push_back(s);
    all.add(ensure(s));
  }
  return kj::joinPromises(all.releaseAsArray()).then([this, found, server, accept]() {
    nlohmann::json out = nlohmann::json::array();
    for (auto& s : found) {
      nlohmann::json j = {{"agent", s->agent}, {"server", server}, {"state", s->state}};
      if (s->state != "running") {
        j["error"] = s->error.empty() ? "not running" : s->error;
        out.push_back(j);
        continue;
      }
      std::map<std::string, const mcp::Pin*> before;
      for (auto& p : s->pinned) before[p.name] = &p;
      nlohmann::json changed = nlohmann::json::array(), added = nlohmann::json::array();
      for (auto& t : s->tools) {
        auto now = mcp::pinOf(t);
        if (std::find(s->diff.changed.begin(), s->diff.changed.end(), t.name) != s->diff.changed.end() &&
            before.count(t.name))
          changed.push_back({{"name", t.name}, {"before", pinJson(*before[t.name])}, {"now", pinJson(now)}});
        if (std::find(s->diff.added.begin(), s->diff.added.end(), t.name) != s->diff.added.end())
          added.push_back({{"name", t.name}, {"now", pinJson(now)}});
      }
      j["changed"] = changed;
      j["added"] = added;
      j["removed"] = s->diff.removed;
      j["accepted"] = false;
      if (accept) {
        std::vector<mcp::Pin> pins;
        for (auto& t : s->tools) pins.push_back(mcp::pinOf(t));
        store_.setMcpPins(s->agent, s->server, mcp::pinsToJson(pins).dump(), nowMs());
        s->pinned = pins;
        s->diff = {};
        s->disabled.clear();
        j["accepted"] = true;
        audit("mcp.reviewed", {{"agent", s->agent}, {"server", server}, {"changed", changed.size()},
                               {"added", added.size()}});
      }
      out.push_back(j);
    }
    return nlohmann::json{{"server", server}, {"reviews", out}};
  });
}

}  // namespace pine
