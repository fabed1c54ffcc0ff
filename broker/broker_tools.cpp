#include "broker/broker_tools.h"

#include <kj/debug.h>

#include "broker/event_bus.h"
#include "broker/policy/profile.h"
#include "broker/policy/routing.h"
#include "broker/policy/setup_rules.h"
#include "broker/policy/topics.h"
#include "broker/run_mcp.h"
#include "common/log.h"
#include "common/names.h"
#include "common/tool_table.h"
#include "common/outside_text.h"

namespace pine {

bool isBrokerTool(const std::string& name) {
  const auto* row = tooltable::findTool(name);
  return row != nullptr && row->side != tooltable::Side::Worker && row->carriedOut;
}

const std::map<std::string, BrokerTools::Handler>& BrokerTools::handlers() {
  // How each broker-side row of the tool table is carried out (tests check the two agree).
  static const std::map<std::string, Handler> table = {
      {"publish_event", [](BrokerTools& t, const nlohmann::json& a) { return t.publishEvent(a); }},
      {"send", [](BrokerTools& t, const nlohmann::json& a) { return t.send(a); }},
      {"state_get", [](BrokerTools& t, const nlohmann::json& a) -> kj::Promise<ToolAnswer> { return t.stateGet(a); }},
      {"state_set", [](BrokerTools& t, const nlohmann::json& a) { return t.stateSet(a); }},
      {"delegate", [](BrokerTools& t, const nlohmann::json& a) { return t.delegate(a); }},
      {"subagent", [](BrokerTools& t, const nlohmann::json& a) { return t.subagent(a); }},
      {"subscribe", [](BrokerTools& t, const nlohmann::json& a) -> kj::Promise<ToolAnswer> { return t.subscribe(a); }},
      {"schedules",
       [](BrokerTools& t, const nlohmann::json& a) -> kj::Promise<ToolAnswer> {
         return policy::builtinReadsOnly("schedules", a) ? kj::Promise<ToolAnswer>(t.schedulesList())
                                                         : t.scheduleCreate(a);
       }},
      {"request_access", [](BrokerTools& t, const nlohmann::json& a) { return t.requestAccess(a); }},
      {"add_skill", [](BrokerTools& t, const nlohmann::json& a) { return t.addSkill(a); }},
      {"create_agent", [](BrokerTools& t, const nlohmann::json& a) { return t.createAgent(a); }},
      {"add_source", [](BrokerTools& t, const nlohmann::json& a) { return t.addSource(a); }},
      {"add_source_type", [](BrokerTools& t, const nlohmann::json& a) { return t.addSourceType(a); }},
      {"add_mcp_server", [](BrokerTools& t, const nlohmann::json& a) { return t.addMcpServer(a); }},
  };
  return table;
}

bool BrokerTools::carriesOut(const std::string& tool) { return handlers().count(tool) > 0; }

kj::Promise<ToolAnswer> BrokerTools::carryOut(const std::string& tool, const nlohmann::json& args) {
  if (isMcpToolName(tool)) return callMcp(tool, args);
  auto it = handlers().find(tool);
  if (it == handlers().end()) return toolError("'" + tool + "' is not a tool of this run");
  return it->second(*this, args);
}

kj::Promise<ToolAnswer> BrokerTools::publishEvent(const nlohmann::json& args) {
  const auto& req = run_.req;
  if (!args.contains("topic") || !args["topic"].is_string()) return toolError("\"topic\" must be a string");
  int hops = req.hops + 1;
  if (auto why = policy::checkHops(hops, run_.config->pine.limits.eventHops)) return toolError(*why);
  store::Event e;
  e.topic = args["topic"].get<std::string>();
  e.source = "agent:" + req.agent;
  e.origin = "agent:" + req.agent + "/" + req.session + "/" + run_.taskId;
  e.trust = trustName(policy::publishTrust(req.trust, run_.tainted()));
  e.payload = args.contains("payload") ? args["payload"].dump() : "null";
  e.hops = hops;
  if (e.payload.size() > (256u << 10)) return toolError("the payload is larger than 256 KiB");
  return run_.services.publish(std::move(e)).then([](store::Event c) {
    return ToolAnswer{"published " + c.id + " on " + c.topic + " (trust: " + c.trust + ")", false};
  });
}

kj::Promise<ToolAnswer> BrokerTools::send(const nlohmann::json& args) {
  std::string to = args.value("to", "");
  if (!args.contains("text") || !args["text"].is_string()) return toolError("\"text\" must be a string");
  if (to == "owner") {
    run_.services.notifyOwner(run_.req.agent, args["text"].get<std::string>(), run_.taskId, "send");
    return ToolAnswer{"sent to the owner", false};
  }
  // A source's own channel (MQTT): only topics on that source's publish list (layer 9).
  bool known = false;
  for (auto& s : run_.config->pine.sources) known |= s.name == to;
  if (!known) return toolError("no channel '" + to + "': send reaches the owner (to: \"owner\") or a source of pine.yaml");
  std::string topic = args.value("topic", "");
  if (topic.empty()) return toolError("sending through source '" + to + "' needs a \"topic\" on its publish list");
  return run_.services.publishToSource(to, topic, args["text"].get<std::string>())
      .then([to, topic](std::optional<std::string> why) -> ToolAnswer {
        if (why) return toolError("not sent: " + *why);
        return ToolAnswer{"sent through " + to + " on " + topic, false};
      });
}

ToolAnswer BrokerTools::stateGet(const nlohmann::json& args) {
  if (!args.contains("key") || !args["key"].is_string()) return toolError("\"key\" must be a string");
  auto row = run_.services.store().state(args["key"].get<std::string>());
  if (!row) return ToolAnswer{"null", false};
  return ToolAnswer{row->value, false};
}

kj::Promise<ToolAnswer> BrokerTools::stateSet(const nlohmann::json& args) {
  if (!args.contains("key") || !args["key"].is_string() || !args.contains("value"))
    return toolError("\"key\" (string) and \"value\" are required");
  std::string key = args["key"].get<std::string>();
  if (!isValidStateKey(key)) return toolError("state keys are 1 to 128 characters of [A-Za-z0-9_./-], not starting with / or .");
  std::string value = args["value"].dump();
  if (value.size() > (64u << 10)) return toolError("a state value is at most 64 KiB of JSON");
  return run_.services.writeState(key, value, "agent:" + run_.req.agent, policy::publishTrust(run_.req.trust, run_.tainted()))
      .then([key](store::Event) { return ToolAnswer{"state " + key + " written", false}; });
}

kj::Promise<ToolAnswer> BrokerTools::delegate(const nlohmann::json& args) {
  const auto& req = run_.req;
  std::string target = args.value("agent", "");
  std::string text = args.value("task", "");
  if (target.empty() || text.empty()) return toolError("\"agent\" and \"task\" are required");
  if (!run_.config->agents.count(target)) return toolError("no agent '" + target + "'");
  std::vector<std::string> chain = req.chain.empty() ? std::vector<std::string>{req.agent} : req.chain;
  if (auto why = policy::checkDelegation(chain, target, run_.config->pine.limits.delegationDepth, run_.agent()))
    return toolError(*why);
  RunRequest r;
  r.agent = target;
  r.session = "from-" + req.agent;
  r.text = text;
  // What an untrusted run hands on stays untrusted; so does what a tainted conversation hands on.
  r.trust = policy::publishTrust(req.trust, run_.tainted());
  r.origin = "delegate:" + run_.taskId;
  r.parentTask = run_.taskId;
  chain.push_back(target);
  r.chain = chain;
  r.depth = req.depth + 1;
  r.hops = req.hops;
  auto sub = run_.services.submit(r);
  if (sub.taskId.empty()) return toolError("not delegated: " + sub.error);
  std::string session = sub.session;
  return run_.services.whenEnded(sub.taskId).then([this, target, session](std::optional<TaskRecord> t) -> ToolAnswer {
    if (!t) return toolError("the delegated task was lost");
    // Receiving the answer of a tainted run taints this conversation.
    bool tainted = run_.services.sessions().tainted(target, session);
    if (tainted)
      run_.services.sessions().markTainted(run_.req.agent, run_.req.session,
                                           "received the answer of a tainted run of " + target);
    if (t->state != TaskState::Done) return toolError(target + " did not answer: " + t->error);
    // An answer written after reading outside content is data for this run, not instructions.
    if (tainted)
      return ToolAnswer{fenceOutside("the answer of " + target + ", which read outside content", t->answer), false};
    return ToolAnswer{t->answer, false};
  });
}

kj::Promise<ToolAnswer> BrokerTools::subagent(const nlohmann::json& args) {
  const auto& req = run_.req;
  std::string text = args.value("task", "");
  if (text.empty()) return toolError("\"task\" is required");
  std::string conversation = Sessions::conversationOf(req.session);
  int cap = run_.config->pine.limits.maxSubAgents;
  if ((int)run_.services.runningSubagents(req.agent, conversation) >= cap)
    return toolError("at most " + std::to_string(cap) + " sub-agents run at once (limits.maxSubAgents); wait for one to answer");
  static unsigned counter = 0;
  RunRequest r;
  r.agent = req.agent;
  r.session = conversation + "+sub" + std::to_string(++counter);
  r.text = text;
  r.trust = req.trust;  // the same conversation: its trust, taint and grants (conversationOf)
  r.origin = "subagent:" + run_.taskId;
  r.parentTask = run_.taskId;
  r.chain = req.chain;
  r.depth = req.depth;
  r.hops = req.hops;
  r.subagent = true;
  auto sub = run_.services.submit(r);
  if (sub.taskId.empty()) return toolError("no sub-agent started: " + sub.error);
  return run_.services.whenEnded(sub.taskId).then([](std::optional<TaskRecord> t) -> ToolAnswer {
    if (!t) return toolError("the sub-agent's task was lost");
    if (t->state != TaskState::Done) return toolError("the sub-agent did not answer: " + t->error);
    return ToolAnswer{t->answer, false};
  });
}

ToolAnswer BrokerTools::subscribe(const nlohmann::json& args) {
  const auto& req = run_.req;
  std::string source = args.value("source", "");
  const config::Source* src = nullptr;
  for (auto& s : run_.config->pine.sources)
    if (s.name == source) src = &s;
  if (!src) return toolError("no source '" + source + "' in pine.yaml");
  // What the owner's `pinectl subscribe` refuses, refused here too (before: "a/#/b" was stored).
  if (auto problem = policy::subscriptionProblem(*src, req.agent, args.value("topic", ""))) return toolError(*problem);
  store::SubscriptionRow row;
  row.id = newId("s");
  row.agent = req.agent;
  row.session = req.session;
  row.source = source;
  row.topic = args.value("topic", "");
  row.separate = args.value("separate", false);
  row.throttleSec = run_.config->pine.limits.subscriptionThrottleSec;
  row.createdMs = nowMs();
  run_.services.addSubscription(row);
  audit("subscription.add", {{"subscription", row.id}, {"agent", row.agent}, {"session", row.session},
                             {"source", source}, {"topic", row.topic}, {"separate", row.separate}});
  return ToolAnswer{"subscribed (" + row.id + "): events of " + source +
                        (row.separate ? " start runs of their own" : " arrive in this conversation as data"),
                    false};
}

ToolAnswer BrokerTools::schedulesList() {
  nlohmann::json list = nlohmann::json::array();
  for (auto& s : run_.config->pine.schedules)
    if (s.agent == run_.req.agent || s.agent == "*")
      list.push_back({{"name", s.name}, {"agent", s.agent}, {"task", s.task}, {"cron", s.cron}, {"intervalSec", s.intervalSec}});
  return ToolAnswer{list.dump(), false};
}

kj::Promise<ToolAnswer> BrokerTools::requestAccess(const nlohmann::json& args) {
  // Approved by the owner (the gate asked): recorded for this conversation; pined re-checks every
  // path when it builds the next sandbox, and refuses what no grant may open.
  const auto& req = run_.req;
  std::string path = args.value("path", ""), access = args.value("access", "read"), network = args.value("network", "");
  bool tainted = run_.tainted();
  auto& sessions = run_.services.sessions();
  std::string granted;
  if (!path.empty()) {
    if (path[0] != '/' || path.find("/../") != std::string::npos || path.size() > 4096 ||
        path.rfind(run_.services.home().root, 0) == 0)
      return toolError("the path must be absolute, without '..', and outside pine's home");
    if (access != "read" && access != "write") return toolError("access is read or write");
    sessions.addGrant(req.agent, req.session, access, path, tainted);
    granted = access + " " + path;
  }
  if (!network.empty()) {
    if (network != "localhost" && network != "all") return toolError("network is localhost or all");
    sessions.addGrant(req.agent, req.session, "network", network, tainted);
    granted += (granted.empty() ? "" : " and ") + std::string("network: ") + network;
  }
  if (granted.empty()) return toolError("name a path (with access read or write) or network (localhost or all)");
  audit("grant.add", {{"agent", req.agent}, {"session", req.session}, {"task", run_.taskId}, {"grant", granted},
                      {"tainted", tainted}});
  return ToolAnswer{"granted for this conversation: " + granted +
                        ". It takes effect from the next task in this conversation (this task's sandbox was built "
                        "before); finish this task and say what you will do with it.",
                    false};
}

}  // namespace pine
