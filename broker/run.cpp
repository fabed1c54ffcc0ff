#include "broker/run.h"

#include <kj/debug.h>
#include <time.h>

#include "common/fd.h"
#include "common/refusal.h"
#include "common/tool_table.h"
#include "common/names.h"
#include "common/log.h"
#include "worker/providers/provider.h"
#include "worker/providers/reply_script.h"
#include "sandbox/guard/bash_guard.h"
#include "sandbox/jail/name_rules.h"
#include "worker/tools/outside_text.h"

namespace pine {
namespace {

std::string clip(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

long long startOfTodayMs() {
  time_t now = time(nullptr);
  struct tm tm;
  localtime_r(&now, &tm);
  tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
  return (long long)mktime(&tm) * 1000;
}


// The worker's half of a model stream, teed into a decoder so the broker reads the usage itself.
class RelaySink final : public proto::ByteSink::Server {
 public:
  RelaySink(proto::ModelStream::Client worker, ::pine::model::StreamDecoder& decoder)
      : worker_(kj::mv(worker)), decoder_(decoder) {}

 protected:
  kj::Promise<void> write(WriteContext context) override {
    auto chunk = context.getParams().getChunk();
    try {
      decoder_.feed(std::string_view(reinterpret_cast<const char*>(chunk.begin()), chunk.size()));
    } catch (std::exception&) {
      // The worker decodes for itself; a stream the broker cannot read just counts no usage.
    }
    auto req = worker_.writeRequest();
    req.setChunk(chunk);
    return req.send();
  }

 private:
  proto::ModelStream::Client worker_;
  ::pine::model::StreamDecoder& decoder_;
};

}  // namespace

bool isBrokerTool(const std::string& name) {
  const auto* row = tooltable::findTool(name);
  return row != nullptr && row->side != tooltable::Side::Worker && row->carriedOut;
}

Run::Run(Broker& broker, std::string taskId, RunRequest request, std::shared_ptr<const config::Home> config,
         std::set<std::string> tools)
    : broker_(broker),
      taskId_(std::move(taskId)),
      req_(std::move(request)),
      config_(std::move(config)),
      tools_(std::move(tools)),
      breaker_(3) {}

const config::AgentConfig& Run::agent() const { return config_->agents.at(req_.agent); }

std::vector<ToolSpecText> Run::workerTools() const {
  std::vector<ToolSpecText> out;
  for (const auto& row : tooltable::builtinTools())
    if (row.side == tooltable::Side::Worker && tools_.count(row.name))
      out.push_back({row.name, row.description, row.parameters.dump()});
  return out;
}

std::vector<ToolSpecText> Run::brokerTools() {
  std::vector<ToolSpecText> out;
  for (const auto& row : tooltable::builtinTools())
    if (tools_.count(row.name) && isBrokerTool(row.name))
      out.push_back({row.name, row.description, row.parameters.dump()});
  return out;
}

void Run::auditDecision(const policy::ToolCall& call, const std::string& decision, const std::string& reason) {
  bool tainted = broker_.sessionTainted(req_.agent, req_.session);
  nlohmann::json f = {{"agent", req_.agent},   {"session", req_.session}, {"task", taskId_},
                      {"tool", call.tool},     {"trust", trustName(req_.trust)},
                      {"tainted", tainted},    {"decision", decision},     {"args", clip(call.args.dump(), 2048)}};
  if (!call.server.empty()) f["server"] = call.server;
  if (!reason.empty()) f["reason"] = reason;
  audit("tool.decision", f);  // secret-shaped strings are redacted by the log filter
  broker_.feed().publish({{"kind", "progress"}, {"task", taskId_}, {"text", call.tool + ": " + decision}});
}

void Run::noteTaint(const std::string& tool, const std::string& server) {
  if (!policy::toolCallMarksTaint(config_->pine.security.taint)) return;
  if (policy::toolTaints(*config_, agent(), tool, server))
    broker_.markTainted(req_.agent, req_.session, "the conversation used " + tool + ", which returns outside content");
}

kj::Promise<GateAnswer> Run::decide(const policy::ToolCall& call, policy::Verdict verdict) {
  using policy::Decision;
  if (verdict.decision == Decision::Allow) {
    auditDecision(call, "allowed", verdict.reason);
    noteTaint(call.tool, call.server);
    return GateAnswer{true, verdict.reason};
  }
  if (verdict.decision == Decision::Refuse) {
    auditDecision(call, "refused", verdict.reason);
    return GateAnswer{false, withAskHint("refused: " + verdict.reason)};
  }
  auditDecision(call, "asked", verdict.reason);
  store::ApprovalRow row;
  row.agent = req_.agent;
  row.session = req_.session;
  row.taskId = taskId_;
  row.tool = call.tool;
  row.args = call.args.dump();
  row.reason = verdict.reason;
  row.alwaysOffered = verdict.alwaysOffered;
  row.alwaysScope = verdict.alwaysScope;
  row.tainted = broker_.sessionTainted(req_.agent, req_.session);
  int timeout = config_->pine.security.approvalTimeout;
  broker_.notifyOwner(req_.agent, "waiting for your approval: " + call.tool + " (" + verdict.reason + ")", taskId_);
  return broker_.approvalsDesk().ask(row, timeout).then([this, call, row, timeout](ApprovalOutcome o) {
    if (o.state == "approved") {
      auditDecision(call, "approved", o.always ? "always in this conversation" : "once");
      if (o.always && !row.alwaysScope.empty())
        broker_.store().addGrant({req_.agent, Broker::conversationOf(req_.session), "always", row.alwaysScope, row.tainted, nowMs()});
      noteTaint(call.tool, call.server);
      return GateAnswer{true, "approved by the owner"};
    }
    if (o.state == "timeout") {
      auditDecision(call, "timed_out", "no answer within " + std::to_string(timeout) + " s");
      return GateAnswer{false, "not approved: the owner did not answer within " + std::to_string(timeout) +
                                   " s. Do not retry; report that this action needs the owner's approval."};
    }
    auditDecision(call, o.state == "denied" ? "denied" : "cancelled", "");
    return GateAnswer{false, "not approved: the owner denied " + call.tool +
                                 ". Do not retry or look for another way; report this to the owner."};
  });
}

std::optional<std::string> Run::taintedWriteRefusal(const policy::ToolCall& call, const policy::SessionFacts& facts) {
  if (!facts.tainted || sandboxTainted_) return std::nullopt;
  if (call.tool != "write" && call.tool != "edit" && call.tool != "download") return std::nullopt;
  // The worker's own jail switches at once, but the worker is not trusted to, so the broker refuses
  // instruction files and git settings itself until the next task's sandbox protects them.
  static const sandbox::NameRules rules = sandbox::NameRules::defaults(true);
  std::string path = call.args.is_object() && call.args.contains("path") && call.args["path"].is_string()
                         ? call.args["path"].get<std::string>() : "";
  while (path.rfind("./", 0) == 0) path.erase(0, 2);
  size_t first = path.find_first_not_of('/');
  std::string rel = first == std::string::npos ? "" : path.substr(first);
  bool refuse = rel.empty() || rel.find("..") != std::string::npos;
  if (!refuse) {
    try {
      refuse = rules.refusing(rel, true) != nullptr;
    } catch (std::exception&) {
      refuse = true;
    }
  }
  if (!refuse) return std::nullopt;
  std::string why = "the conversation read outside content during this task: instruction files and git "
                    "settings are read-only for it now";
  auditDecision(call, "refused", why);
  return why;
}

kj::Promise<GateAnswer> Run::checkTool(std::string tool, std::string argsJson) {
  auto args = nlohmann::json::parse(argsJson, nullptr, false);
  policy::ToolCall call{tool, "", args.is_discarded() ? nlohmann::json(argsJson) : args, false};
  const auto* row = tooltable::findTool(tool);
  if (row == nullptr || row->side != tooltable::Side::Worker || !tools_.count(tool)) {
    auditDecision(call, "refused", "not in this run's profile");
    return GateAnswer{false, withAskHint("refused: '" + tool + "' is not a tool of this run")};
  }
  if (breaker_.tripped(tool, call.args)) {
    stopReason_ = "the model repeated the same " + tool + " call; the run was stopped";
    auditDecision(call, "refused", stopReason_);
    return GateAnswer{false, "refused: " + stopReason_};
  }
  auto facts = broker_.sessionFacts(agent(), req_.session, req_.trust == config::Trust::Untrusted);
  if (tool == "bash" && facts.tainted && !sandboxTainted_) {
    // This worker's sandbox was built while the conversation was clean: its instruction files and
    // git settings are writable there. The shell waits for the next task, whose sandbox protects them.
    std::string why = "the conversation read outside content during this task; the shell is available again in the "
                      "next task, where instruction files and git settings are read-only";
    auditDecision(call, "refused", why);
    return GateAnswer{false, withAskHint("refused: " + why), true};
  }
  if (tool == "download") {
    // Decided when the worker fetches (its Download capability), not here: one decision, one question.
    auditDecision(call, "refused", "download is decided by its fetch");
    return GateAnswer{false, "refused: download goes through its own capability"};
  }
  if (auto why = taintedWriteRefusal(call, facts)) return GateAnswer{false, withAskHint("refused: " + *why), true};
  if (tool == "bash") {
    // The guard decides before anyone is asked: the owner never approves a command it then refuses.
    const auto cmd = call.args.is_object() && call.args.contains("command") && call.args["command"].is_string()
                         ? call.args["command"].get<std::string>() : std::string{};
    const auto guarded = guard::checkBashCommand(cmd);
    if (!guarded.allowed) {
      auditDecision(call, "refused", "the command guard: " + guarded.reason);
      return GateAnswer{false, withAskHint("refused by the command guard, nothing was run: " + guarded.reason)};
    }
  }
  return decide(call, policy::decideToolCall(*config_, agent(), facts, call)).then([this, tool](GateAnswer a) {
    a.tainted = broker_.sessionTainted(req_.agent, req_.session);
    a.outside = a.allowed && policy::toolTaints(*config_, agent(), tool, "");
    return a;
  });
}

kj::Promise<ToolAnswer> Run::callTool(std::string tool, std::string argsJson) {
  auto args = nlohmann::json::parse(argsJson, nullptr, false);
  policy::ToolCall call{tool, "", args.is_discarded() ? nlohmann::json(argsJson) : args, false};
  if (!tools_.count(tool) || !isBrokerTool(tool)) {  // the capability was never handed out; a forged name ends here
    auditDecision(call, "refused", "not in this run's profile");
    return toolError("'" + tool + "' is not a tool of this run");
  }
  if (args.is_discarded() || !args.is_object()) {
    auditDecision(call, "refused", "arguments are not a JSON object");
    return toolError("the arguments must be a JSON object");
  }
  if (breaker_.tripped(tool, args)) {
    stopReason_ = "the model repeated the same " + tool + " call; the run was stopped";
    auditDecision(call, "refused", stopReason_);
    return toolError(stopReason_);
  }
  auto facts = broker_.sessionFacts(agent(), req_.session, req_.trust == config::Trust::Untrusted);
  policy::Verdict v;
  if (auto why = checkSetupArgs(tool, args)) {
    auditDecision(call, "refused", *why);
    return toolError(*why);
  }
  if (tool == "schedules" && !policy::builtinReadsOnly(tool, args)) {
    policy::ScheduleRequest sr;
    std::string target = args.value("for", "conversation");
    sr.target = target == "all"     ? policy::ScheduleTarget::AllAgents
                : target == "agent" ? policy::ScheduleTarget::ThisAgent  // facts.mainConversation tells main from side
                                    : policy::ScheduleTarget::ThisConversation;
    sr.agent = req_.agent;
    sr.intervalSec = args.contains("intervalSec") && args["intervalSec"].is_number_integer() ? args["intervalSec"].get<int>() : 0;
    sr.task = args.value("task", "");
    v = policy::decideSchedule(agent(), facts, sr);
  } else if (tool == "request_access") {
    v = policy::decideRequestAccess(facts);
  } else if (tool == "add_source") {
    v = policy::decideAddSource(agent(), facts, addSourceRequest(args));
  } else if (tool == "add_skill") {
    v = policy::decideAddSkill(agent(), facts, {args.value("name", ""), args.value("forAllAgents", false)});
  } else if (tool == "subscribe") {
    v = policy::decideSubscribe(facts);
  } else if (tool == "publish_event") {
    std::string topic = args.value("topic", "");
    if (auto why = policy::checkPublish(agent(), topic)) v = policy::refused(*why);
    else v = policy::decideToolCall(*config_, agent(), facts, call);
  } else {
    v = policy::decideToolCall(*config_, agent(), facts, call);
  }
  return decide(call, v).then([this, tool, args](GateAnswer g) -> kj::Promise<ToolAnswer> {
    if (!g.allowed) return toolError(g.reason);
    return carryOut(tool, args);
  });
}

const std::map<std::string, Run::Handler>& Run::handlers() {
  // How each broker-side row of the tool table is carried out (tests check the two agree).
  static const std::map<std::string, Handler> table = {
      {"publish_event", [](Run& r, const nlohmann::json& a) { return r.publishEvent(a); }},
      {"send", [](Run& r, const nlohmann::json& a) { return r.send(a); }},
      {"state_get", [](Run& r, const nlohmann::json& a) -> kj::Promise<ToolAnswer> { return r.stateGet(a); }},
      {"state_set", [](Run& r, const nlohmann::json& a) { return r.stateSet(a); }},
      {"delegate", [](Run& r, const nlohmann::json& a) { return r.delegate(a); }},
      {"subagent", [](Run& r, const nlohmann::json& a) { return r.subagent(a); }},
      {"subscribe", [](Run& r, const nlohmann::json& a) -> kj::Promise<ToolAnswer> { return r.subscribe(a); }},
      {"schedules",
       [](Run& r, const nlohmann::json& a) -> kj::Promise<ToolAnswer> {
         return policy::builtinReadsOnly("schedules", a) ? kj::Promise<ToolAnswer>(r.schedulesList()) : r.scheduleCreate(a);
       }},
      {"request_access", [](Run& r, const nlohmann::json& a) { return r.requestAccess(a); }},
      {"add_skill", [](Run& r, const nlohmann::json& a) { return r.addSkill(a); }},
      {"create_agent", [](Run& r, const nlohmann::json& a) { return r.createAgent(a); }},
      {"add_source", [](Run& r, const nlohmann::json& a) { return r.addSource(a); }},
  };
  return table;
}

bool Run::carriesOut(const std::string& tool) { return handlers().count(tool) > 0; }

kj::Promise<ToolAnswer> Run::carryOut(const std::string& tool, const nlohmann::json& args) {
  auto it = handlers().find(tool);
  if (it == handlers().end()) return toolError("'" + tool + "' is not a tool of this run");
  return it->second(*this, args);
}

kj::Promise<ToolAnswer> Run::publishEvent(const nlohmann::json& args) {
  if (!args.contains("topic") || !args["topic"].is_string()) return toolError("\"topic\" must be a string");
  int hops = req_.hops + 1;
  if (auto why = policy::checkHops(hops, config_->pine.limits.eventHops)) return toolError(*why);
  bool tainted = broker_.sessionTainted(req_.agent, req_.session);
  store::Event e;
  e.topic = args["topic"].get<std::string>();
  e.source = "agent:" + req_.agent;
  e.origin = "agent:" + req_.agent + "/" + req_.session + "/" + taskId_;
  e.trust = policy::publishTrust(req_.trust, tainted) == config::Trust::Owner ? "owner" : "untrusted";
  e.payload = args.contains("payload") ? args["payload"].dump() : "null";
  e.hops = hops;
  if (e.payload.size() > (256u << 10)) return toolError("the payload is larger than 256 KiB");
  return broker_.publish(std::move(e)).then([](store::Event c) {
    return ToolAnswer{"published " + c.id + " on " + c.topic + " (trust: " + c.trust + ")", false};
  });
}

kj::Promise<ToolAnswer> Run::send(const nlohmann::json& args) {
  std::string to = args.value("to", "");
  if (!args.contains("text") || !args["text"].is_string()) return toolError("\"text\" must be a string");
  if (to == "owner") {
    broker_.notifyOwner(req_.agent, args["text"].get<std::string>(), taskId_);
    return ToolAnswer{"sent to the owner", false};
  }
  // A source's own channel (MQTT): only topics on that source's publish list (layer 9).
  bool known = false;
  for (auto& s : config_->pine.sources) known |= s.name == to;
  if (!known) return toolError("no channel '" + to + "': send reaches the owner (to: \"owner\") or a source of pine.yaml");
  std::string topic = args.value("topic", "");
  if (topic.empty()) return toolError("sending through source '" + to + "' needs a \"topic\" on its publish list");
  if (auto why = broker_.publishToSource(to, topic, args["text"].get<std::string>())) return toolError("not sent: " + *why);
  return ToolAnswer{"sent through " + to + " on " + topic, false};
}

ToolAnswer Run::stateGet(const nlohmann::json& args) {
  if (!args.contains("key") || !args["key"].is_string()) return toolError("\"key\" must be a string");
  auto row = broker_.store().state(args["key"].get<std::string>());
  if (!row) return ToolAnswer{"null", false};
  return ToolAnswer{row->value, false};
}

kj::Promise<ToolAnswer> Run::stateSet(const nlohmann::json& args) {
  if (!args.contains("key") || !args["key"].is_string() || !args.contains("value"))
    return toolError("\"key\" (string) and \"value\" are required");
  std::string key = args["key"].get<std::string>();
  if (!isValidStateKey(key)) return toolError("state keys are 1 to 128 characters of [A-Za-z0-9_./-], not starting with / or .");
  std::string value = args["value"].dump();
  if (value.size() > (64u << 10)) return toolError("a state value is at most 64 KiB of JSON");
  bool tainted = broker_.sessionTainted(req_.agent, req_.session);
  return broker_.writeState(key, value, "agent:" + req_.agent, policy::publishTrust(req_.trust, tainted))
      .then([key](store::Event) { return ToolAnswer{"state " + key + " written", false}; });
}

kj::Promise<ToolAnswer> Run::delegate(const nlohmann::json& args) {
  std::string target = args.value("agent", "");
  std::string text = args.value("task", "");
  if (target.empty() || text.empty()) return toolError("\"agent\" and \"task\" are required");
  if (!config_->agents.count(target)) return toolError("no agent '" + target + "'");
  std::vector<std::string> chain = req_.chain.empty() ? std::vector<std::string>{req_.agent} : req_.chain;
  if (auto why = policy::checkDelegation(chain, target, config_->pine.limits.delegationDepth, agent()))
    return toolError(*why);
  RunRequest r;
  r.agent = target;
  r.session = "from-" + req_.agent;
  r.text = text;
  // What an untrusted run hands on stays untrusted; so does what a tainted conversation hands on.
  bool tainted = broker_.sessionTainted(req_.agent, req_.session);
  r.trust = policy::publishTrust(req_.trust, tainted);
  r.origin = "delegate:" + taskId_;
  r.parentTask = taskId_;
  chain.push_back(target);
  r.chain = chain;
  r.depth = req_.depth + 1;
  r.hops = req_.hops;
  auto sub = broker_.submit(r);
  if (sub.taskId.empty()) return toolError("not delegated: " + sub.error);
  std::string session = sub.session;
  return broker_.whenEnded(sub.taskId).then([this, target, session](const TaskRecord* t) -> ToolAnswer {
    if (!t) return toolError("the delegated task was lost");
    // Receiving the answer of a tainted run taints this conversation.
    bool tainted = broker_.sessionTainted(target, session);
    if (tainted) broker_.markTainted(req_.agent, req_.session, "received the answer of a tainted run of " + target);
    if (t->state != TaskState::Done) return toolError(target + " did not answer: " + t->error);
    // An answer written after reading outside content is data for this run, not instructions.
    if (tainted) return ToolAnswer{tools::fenceOutside("the answer of " + target + ", which read outside content", t->answer), false};
    return ToolAnswer{t->answer, false};
  });
}

kj::Promise<ToolAnswer> Run::subagent(const nlohmann::json& args) {
  std::string text = args.value("task", "");
  if (text.empty()) return toolError("\"task\" is required");
  std::string conversation = Broker::conversationOf(req_.session);
  int cap = config_->pine.limits.maxSubAgents;
  if ((int)broker_.runningSubagents(req_.agent, conversation) >= cap)
    return toolError("at most " + std::to_string(cap) + " sub-agents run at once (limits.maxSubAgents); wait for one to answer");
  static unsigned counter = 0;
  RunRequest r;
  r.agent = req_.agent;
  r.session = conversation + "+sub" + std::to_string(++counter);
  r.text = text;
  r.trust = req_.trust;  // the same conversation: its trust, taint and grants (conversationOf)
  r.origin = "subagent:" + taskId_;
  r.parentTask = taskId_;
  r.chain = req_.chain;
  r.depth = req_.depth;
  r.hops = req_.hops;
  r.subagent = true;
  auto sub = broker_.submit(r);
  if (sub.taskId.empty()) return toolError("no sub-agent started: " + sub.error);
  return broker_.whenEnded(sub.taskId).then([](const TaskRecord* t) -> ToolAnswer {
    if (!t) return toolError("the sub-agent's task was lost");
    if (t->state != TaskState::Done) return toolError("the sub-agent did not answer: " + t->error);
    return ToolAnswer{t->answer, false};
  });
}

ToolAnswer Run::subscribe(const nlohmann::json& args) {
  std::string source = args.value("source", "");
  const config::Source* src = nullptr;
  for (auto& s : config_->pine.sources)
    if (s.name == source) src = &s;
  if (!src) return toolError("no source '" + source + "' in pine.yaml");
  if (!src->agent.empty() && src->agent != req_.agent) return toolError("source '" + source + "' belongs to " + src->agent);
  store::SubscriptionRow row;
  row.id = newId("s");
  row.agent = req_.agent;
  row.session = req_.session;
  row.source = source;
  row.topic = args.value("topic", "");
  row.separate = args.value("separate", false);
  row.throttleSec = config_->pine.limits.subscriptionThrottleSec;
  row.createdMs = nowMs();
  broker_.addSubscription(row);
  audit("subscription.add", {{"subscription", row.id}, {"agent", row.agent}, {"session", row.session},
                             {"source", source}, {"topic", row.topic}, {"separate", row.separate}});
  return ToolAnswer{"subscribed (" + row.id + "): events of " + source +
                        (row.separate ? " start runs of their own" : " arrive in this conversation as data"),
                    false};
}

ToolAnswer Run::schedulesList() {
  nlohmann::json list = nlohmann::json::array();
  for (auto& s : config_->pine.schedules)
    if (s.agent == req_.agent || s.agent == "*")
      list.push_back({{"name", s.name}, {"agent", s.agent}, {"task", s.task}, {"cron", s.cron}, {"intervalSec", s.intervalSec}});
  return ToolAnswer{list.dump(), false};
}

kj::Promise<ToolAnswer> Run::requestAccess(const nlohmann::json& args) {
  // Approved by the owner (decide() asked): recorded for this conversation; pined re-checks every
  // path when it builds the next sandbox, and refuses what no grant may open.
  std::string path = args.value("path", ""), access = args.value("access", "read"), network = args.value("network", "");
  bool tainted = broker_.sessionTainted(req_.agent, req_.session);
  std::string granted;
  if (!path.empty()) {
    if (path[0] != '/' || path.find("/../") != std::string::npos || path.size() > 4096 ||
        path.rfind(broker_.home().root, 0) == 0)
      return toolError("the path must be absolute, without '..', and outside pine's home");
    if (access != "read" && access != "write") return toolError("access is read or write");
    broker_.store().addGrant({req_.agent, Broker::conversationOf(req_.session), access, path, tainted, nowMs()});
    granted = access + " " + path;
  }
  if (!network.empty()) {
    if (network != "localhost" && network != "all") return toolError("network is localhost or all");
    broker_.store().addGrant({req_.agent, Broker::conversationOf(req_.session), "network", network, tainted, nowMs()});
    granted += (granted.empty() ? "" : " and ") + std::string("network: ") + network;
  }
  if (granted.empty()) return toolError("name a path (with access read or write) or network (localhost or all)");
  audit("grant.add", {{"agent", req_.agent}, {"session", req_.session}, {"task", taskId_}, {"grant", granted},
                      {"tainted", tainted}});
  return ToolAnswer{"granted for this conversation: " + granted +
                        ". It takes effect from the next task in this conversation (this task's sandbox was built "
                        "before); finish this task and say what you will do with it.",
                    false};
}

void Run::recordUsage(long long in, long long out) {
  tokensIn_ += in;
  tokensOut_ += out;
  const auto& modelName = config_->effectiveModel(agent());
  auto m = config_->models.models.find(modelName);
  if (m != config_->models.models.end() && m->second.pricing)
    cost_ += (in * m->second.pricing->input + out * m->second.pricing->output) / 1e6;
}

kj::Promise<ModelAnswer> Run::model(ModelCallData call, proto::ModelStream::Client sink) {
  const auto& a = agent();
  if (!stopReason_.empty()) return ModelAnswer{0, {}, stopReason_};
  if (++modelCalls_ > 200) {
    stopReason_ = "the run made more than 200 model calls";
    return ModelAnswer{0, {}, stopReason_};
  }
  auto today = broker_.store().usageSince(a.id, startOfTodayMs());
  policy::BudgetUse use{today.tokensIn + today.tokensOut + tokensIn_ + tokensOut_, today.cost + cost_, cost_};
  if (auto why = policy::checkBudget(a.budget, use)) {
    stopReason_ = *why;
    broker_.notifyOwner(a.id, "budget: " + *why + "; the run was stopped", taskId_);
    audit("budget.stop", {{"agent", a.id}, {"task", taskId_}, {"reason", *why}});
    return ModelAnswer{0, {}, *why};
  }
  const auto& modelName = config_->effectiveModel(a);
  auto m = config_->models.models.find(modelName);
  if (m == config_->models.models.end()) return ModelAnswer{0, {}, "agent " + a.id + " has no model configured"};
  auto p = config_->models.providers.find(m->second.provider);
  if (p == config_->models.providers.end()) return ModelAnswer{0, {}, "no provider '" + m->second.provider + "'"};
  const config::Provider& provider = p->second;
  auto wire = ::pine::model::makeProvider(provider.kind);
  auto decoder = std::shared_ptr<::pine::model::StreamDecoder>(wire->decoder().release());

  if (provider.kind == config::ProviderKind::Script) {
    // The script model answers here, in the OpenAI wire format, so the worker's client path is the real one.
    std::string sse;
    try {
      std::string file = broker_.home().root + "/" + provider.script;
      auto script = ::pine::model::ReplyScript::parse(readFile(file), file);
      sse = script.answer(nlohmann::json::parse(call.body));
    } catch (std::exception& e) {
      return ModelAnswer{500, {}, std::string("the script model could not answer: ") + e.what()};
    }
    try {
      decoder->feed(sse);
      auto turn = decoder->finish();
      recordUsage(turn.usage.input, turn.usage.output);
    } catch (std::exception&) {
    }
    auto req = sink.writeRequest();
    req.setChunk(kj::arrayPtr(reinterpret_cast<const kj::byte*>(sse.data()), sse.size()));
    return req.send().then([]() { return ModelAnswer{200, {{"content-type", "text/event-stream"}}, ""}; });
  }

  auto req = broker_.supervisor().egressRequest();
  auto r = req.initRequest();
  r.setMethod("POST");
  std::string base = provider.baseUrl;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (call.path.empty() || call.path[0] != '/' || call.path.find("..") != std::string::npos ||
      call.path.find_first_of("?#@") != std::string::npos)
    return ModelAnswer{0, {}, "a model call's path must be a plain absolute path"};
  r.setUrl(base + call.path);
  std::vector<std::pair<std::string, std::string>> headers;
  for (auto& [n, v] : call.headers) {
    std::string lower = n;
    for (auto& c : lower) c = (char)tolower((unsigned char)c);
    // The worker never chooses credentials or where they go.
    if (lower == "authorization" || lower == "x-api-key" || lower == "cookie" || lower == "host" ||
        v.find("${") != std::string::npos)
      continue;
    headers.emplace_back(n, v);
  }
  for (auto& h : ::pine::model::keyHeaders(provider)) headers.push_back(h);
  auto hs = r.initHeaders(headers.size());
  for (size_t i = 0; i < headers.size(); ++i) {
    hs[i].setName(headers[i].first);
    hs[i].setValue(headers[i].second);
  }
  r.setBody(kj::arrayPtr(reinterpret_cast<const kj::byte*>(call.body.data()), call.body.size()));
  req.setSink(kj::heap<RelaySink>(kj::mv(sink), *decoder));
  return req.send().then([this, decoder](auto&& resp) {
    ModelAnswer a{resp.getStatus(), {}, resp.getError().cStr()};
    for (auto h : resp.getHeaders()) a.headers.emplace_back(h.getName().cStr(), h.getValue().cStr());
    if (a.status >= 200 && a.status < 300) {
      try {
        auto turn = decoder->finish();
        recordUsage(turn.usage.input, turn.usage.output);
      } catch (std::exception&) {
      }
    }
    return a;
  });
}

}  // namespace pine
