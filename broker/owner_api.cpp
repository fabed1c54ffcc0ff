#include "broker/owner_api.h"

#include "config/errors.h"

#include <kj/debug.h>

#include "broker/feed.h"
#include "broker/policy/topics.h"
#include "broker/usage.h"
#include "schedule/describe.h"
#include "common/rpc_link.h"
#include "common/log.h"
#include "common/names.h"

namespace pine {
namespace {

long long queryInt(const ApiQuery& q, const char* name, long long dflt) {
  auto it = q.find(name);
  if (it == q.end() || it->second.empty()) return dflt;
  // The whole value, a whole number: "10abc" is not 10, and a date for `since` is not its year in ms.
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(it->second, &used);
  } catch (...) {
  }
  if (used == 0 || used != it->second.size())
    throw std::invalid_argument(std::string("query parameter '") + name + "' must be a whole number, got '" +
                                it->second.substr(0, 40) + "'");
  return v;
}

std::optional<config::Mode> parseMode(const std::string& s) {
  if (s == "manual") return config::Mode::Manual;
  if (s == "auto") return config::Mode::Auto;
  if (s == "bypass") return config::Mode::Bypass;
  return std::nullopt;
}

}  // namespace

kj::Promise<ApiReply> OwnerApi::status() {
  return p_.supervisor().statusRequest().send().then(
      [this](auto&& r) {
        long long now = nowMs();
        nlohmann::json procs = nlohmann::json::array();
        for (auto p : r.getProcesses()) {
          nlohmann::json j = {{"role", p.getRole().cStr()},
                              {"pid", p.getPid()},
                              {"startedAt", isoTime(p.getStartedAtMs())},
                              {"uptimeSeconds", (now - p.getStartedAtMs()) / 1000.0},
                              {"restarts", p.getRestarts()}};
          if (p.getTaskId().size()) j["task"] = p.getTaskId().cStr();
          if (p.getAgent().size()) j["agent"] = p.getAgent().cStr();
          procs.push_back(j);
        }
        nlohmann::json active = nlohmann::json::array();
        for (auto* t : p_.queue.active()) active.push_back(t->toJson());
        return ApiReply{200,
                        {{"home", p_.home.root},
                         {"processes", procs},
                         {"tasks", active},
                         {"pendingApprovals", p_.store.approvals(true, 1000).size()},
                         {"channels", p_.channelStatus ? p_.channelStatus() : nlohmann::json::array()}}};
      },
      [](kj::Exception&& e) { return apiError(502, "pined did not answer: " + describeRemote(e)); });
}

kj::Promise<ApiReply> OwnerApi::reload() {
  return p_.supervisor().reloadConfigRequest().send().then([this](auto&& r) {
    nlohmann::json errors = nlohmann::json::array();
    for (auto e : r.getErrors()) errors.push_back(std::string(e.cStr()));
    // pined validated it: the broker reads the same files. Unless pined restarts the broker for it:
    // then the next one reads them, and what this one would start (a command source's run) is not
    // started here too, a second before it is stopped.
    if (errors.empty() && !r.getBrokerRestarts()) p_.reloadConfiguration();
    nlohmann::json reply = {{"ok", errors.empty()}, {"errors", errors}};
    if (r.getBrokerRestarts()) reply["brokerRestarts"] = true;
    return ApiReply{200, reply};
  });
}

nlohmann::json OwnerApi::taskJson(const store::TaskRow& r) {
  nlohmann::json j;
  if (auto* t = p_.queue.find(r.id)) {
    j = t->toJson();  // live tasks say more (worker pid, sandbox) than their stored row
  } else {
    j = {{"id", r.id},       {"agent", r.agent}, {"session", r.session}, {"trust", r.trust},
         {"state", r.state}, {"createdAt", isoTime(r.createdMs)}};
    if (r.endedMs) j["endedAt"] = isoTime(r.endedMs);
    if (parseTaskState(r.state) == TaskState::Done) j["answer"] = r.answer;
    if (!r.error.empty()) j["error"] = r.error;
    if (r.usage.any()) j["usage"] = usageJson(r.usage);
  }
  // What it changed in its workspace (task_changes.h), once known: `pinectl changes ID` shows it.
  if (auto c = p_.store.taskChanges(r.id)) j["changedFiles"] = c->files;
  return j;
}

// One task with what it was asked (pinectl task ID); its tool calls are in the audit log.
ApiReply OwnerApi::task(const std::string& id) {
  auto r = p_.store.task(id);
  if (!r) return apiError(404, "no task '" + id + "' (pinectl tasks lists the recent ones)");
  auto j = taskJson(*r);
  j["text"] = r->text;
  if (r->startedMs) j["startedAt"] = isoTime(r->startedMs);
  return {200, {{"task", j}}};
}

ApiReply OwnerApi::tasks(const ApiQuery& query) {
  long long limit;
  try {
    limit = std::clamp<long long>(queryInt(query, "limit", 100), 1, 1000);
  } catch (std::exception& e) {
    return apiError(400, e.what());
  }
  auto agentIt = query.find("agent");
  auto stateIt = query.find("state");
  nlohmann::json list = nlohmann::json::array();
  for (auto& r : p_.store.tasks((int)limit, agentIt == query.end() ? "" : agentIt->second,
                               stateIt == query.end() ? "" : stateIt->second))
    list.push_back(taskJson(r));
  return {200, {{"tasks", list}}};
}

ApiReply OwnerApi::listEvents(const ApiQuery& query) {
  store::EventQuery q;
  std::string pattern;
  try {
    q.afterSeq = queryInt(query, "after", 0);
    q.sinceMs = queryInt(query, "since", 0);
    q.limit = (int)std::clamp<long long>(queryInt(query, "limit", 100), 1, 1000);
    q.newestFirst = queryInt(query, "newest", 0) != 0;
  } catch (std::exception& e) {
    return apiError(400, e.what());
  }
  if (auto it = query.find("source"); it != query.end()) q.source = it->second;
  if (auto it = query.find("trust"); it != query.end()) {
    if (it->second != "owner" && it->second != "untrusted" && !it->second.empty())
      return apiError(400, "trust is owner or untrusted");
    q.trust = it->second;
  }
  if (auto it = query.find("topic"); it != query.end()) {
    pattern = it->second;
    q.topicPrefix = pattern.substr(0, pattern.find_first_of("+#"));
  }
  nlohmann::json list = nlohmann::json::array();
  // A wildcard pattern narrows in SQL by its literal prefix, then here exactly.
  while (true) {
    auto batch = p_.store.events(q);
    for (auto& e : batch) {
      // The stream's matcher (MQTT's + and #): the same filter lists and streams the same events.
      if (pattern.empty() || topicMatches(pattern, e.topic)) list.push_back(eventJson(e));
      if ((int)list.size() >= q.limit) break;
    }
    if ((int)list.size() >= q.limit || (int)batch.size() < q.limit || pattern.empty()) break;
    q.afterSeq = batch.back().seq;
  }
  return {200, {{"events", list}}};
}

kj::Promise<ApiReply> OwnerApi::publishEvent(const nlohmann::json& body) {
  // One event {"topic", "payload"}, or a batch {"events": [...]} committed in one transaction.
  bool batch = body.is_object() && body.contains("events");
  if (batch && (!body["events"].is_array() || body["events"].empty() || body["events"].size() > 1000))
    return apiError(400, "\"events\" must be a list of 1 to 1000 events like {\"topic\": \"...\", \"payload\": ...}");
  const size_t count = batch ? body["events"].size() : 1;
  std::vector<store::Event> drafts;
  drafts.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const auto& item = batch ? body["events"][i] : body;
    std::string where = batch ? "events[" + std::to_string(i) + "]: " : "";
    auto topicField = item.is_object() ? item.find("topic") : item.end();
    if (!item.is_object() || topicField == item.end() || !topicField->is_string())
      return apiError(400, where + "the body must be {\"topic\": \"...\", \"payload\": ...}");
    const std::string& topic = topicField->get_ref<const std::string&>();
    if (auto why = policy::validateTopic(topic)) return apiError(400, where + "topic '" + topic + "': " + *why);
    if (policy::isReservedTopic(topic))
      return apiError(403, where + "topic '" + topic + "' is pine's own (agent/, approval/, pine/, state/, timer/): use another");
    store::Event e;
    e.topic = topic;
    e.source = "owner";
    e.origin = "control-api";
    e.trust = "owner";  // the control API authenticated the owner
    auto payload = item.find("payload");
    e.payload = payload != item.end() ? payload->dump() : "null";
    drafts.push_back(std::move(e));
  }
  auto notStored = [](kj::Exception&& ex) { return apiError(503, "not stored: " + describeRemote(ex)); };
  if (!batch) {
    // One event, the case of webhooks and devices that send one at a time: its own promise (no
    // join), the answer written as text without building it as an object first (bench-events).
    return p_.bus.publishText(std::move(drafts[0]))
        .then([](std::string event) { return ApiReply{200, {}, 0, "{\"event\":" + event + "}"}; }, kj::mv(notStored));
  }
  kj::Vector<kj::Promise<store::Event>> promises;
  for (auto& d : drafts) promises.add(p_.bus.publish(std::move(d)));  // same loop turn: one transaction
  return kj::joinPromises(promises.releaseAsArray())
      .then(
          [](kj::Array<store::Event> committed) {
            nlohmann::json list = nlohmann::json::array();
            for (auto& c : committed) list.push_back(eventJson(c));
            return ApiReply{200, {{"events", list}}};
          },
          kj::mv(notStored));
}

ApiReply OwnerApi::agents() {
  nlohmann::json list = nlohmann::json::array();
  for (auto& [id, a] : p_.config->agents) {
    config::Mode mode = p_.sessions.effectiveMode(a);
    nlohmann::json sessions = nlohmann::json::array();
    for (auto& s : p_.store.sessions(id)) {
      // Bypass waits in a conversation that read outside content until a reset (or "anyway").
      bool paused = mode == config::Mode::Bypass && s.tainted && !s.bypassAnyway &&
                    !p_.config->pine.security.bypassWhenTainted;
      sessions.push_back({{"session", s.session}, {"tainted", s.tainted}, {"taintReason", s.taintReason},
                          {"bypassPaused", paused}});
    }
    nlohmann::json active = nlohmann::json::array();
    for (auto* t : p_.queue.active())
      if (t->agent == id) active.push_back(t->id);
    list.push_back({{"id", id},
                    {"description", a.description},
                    {"mode", config::enumName(mode)},
                    {"configuredMode", config::enumName(p_.config->effectiveMode(a))},
                    {"model", p_.config->effectiveModel(a)},
                    {"tools", a.tools},
                    {"sessions", sessions},
                    {"activeTasks", active}});
  }
  return {200, {{"agents", list}}};
}

ApiReply OwnerApi::sendMessage(const std::string& agent, const nlohmann::json& body) {
  if (!body.is_object() || !body.contains("text") || !body["text"].is_string() ||
      body["text"].get<std::string>().empty())
    return apiError(400, "\"text\" must be a non-empty string");
  std::string session = "main";
  if (body.contains("session")) {
    if (!body["session"].is_string() || !isValidTaskId(body["session"].get<std::string>()))
      return apiError(400, "\"session\" must be [A-Za-z0-9_.-], 1 to 64 characters");
    session = body["session"].get<std::string>();
  }
  RunRequest r;
  r.agent = agent;
  r.session = session;
  r.text = body["text"].get<std::string>();
  r.trust = config::Trust::Owner;  // the control API authenticated the owner
  r.origin = "owner";
  auto s = p_.queue.submit(r);
  if (s.taskId.empty()) return apiError(s.status, s.error);
  return {200, {{"task", s.taskId}, {"session", s.session}}};
}

kj::Promise<ApiReply> OwnerApi::taskResult(const std::string& taskId) {
  return p_.queue.whenEnded(taskId).then([this, taskId](std::optional<TaskRecord> t) -> ApiReply {
    if (t) return {200, t->toJson()};
    auto row = p_.store.task(taskId);
    if (!row) return apiError(404, "no task '" + taskId + "'");
    nlohmann::json j = {{"id", row->id}, {"agent", row->agent}, {"state", row->state}, {"session", row->session}};
    if (parseTaskState(row->state) == TaskState::Done) j["answer"] = row->answer;
    if (!row->error.empty()) j["error"] = row->error;
    return {200, j};
  });
}

ApiReply OwnerApi::noAgent(const std::string& agent) const {
  std::vector<std::string> ids;
  for (const auto& [id, a] : p_.config->agents) ids.push_back(id);
  return apiError(404, "no agent '" + agent + "'; " + config::whatExists(agent, ids, "agents"));
}

ApiReply OwnerApi::resetAgent(const std::string& agent, const nlohmann::json& body) {
  if (!p_.config->agents.count(agent)) return noAgent(agent);
  std::vector<std::string> sessions;
  if (body.is_object() && body.contains("session")) {
    // One pine made (a subscription's agent~u-ID, a sub-agent's conv+subN), or one a message could
    // name; any other text is refused, not audited as reset.
    if (!body["session"].is_string()) return apiError(400, "\"session\" must be a string");
    const std::string session = body["session"].get<std::string>();
    bool known = false;
    for (auto& s : p_.store.sessions(agent)) known |= s.session == session;
    if (!known && !isValidTaskId(session))
      return apiError(400, "\"session\" must be one of the agent's conversations, or [A-Za-z0-9_.-], 1 to 64 characters");
    sessions.push_back(session);
  } else {
    for (auto& s : p_.store.sessions(agent)) sessions.push_back(s.session);
  }
  for (auto& s : sessions) p_.sessions.reset(agent, s);
  return {200, {{"agent", agent}, {"reset", sessions}}};
}

ApiReply OwnerApi::setMode(const std::string& agent, const nlohmann::json& body) {
  auto it = p_.config->agents.find(agent);
  if (it == p_.config->agents.end()) return noAgent(agent);
  if (!body.is_object() || !body.contains("mode") || !body["mode"].is_string())
    return apiError(400, "the body must be {\"mode\": \"manual|auto|bypass\"}");
  auto mode = parseMode(body["mode"].get<std::string>());
  if (!mode) return apiError(400, "mode must be manual, auto or bypass");
  p_.sessions.setModeSwitch(agent, *mode);
  nlohmann::json reply = {{"agent", agent}, {"mode", config::enumName(*mode)}, {"until", "the daemon restarts"}};
  // Bypass in a conversation that has read outside content is paused unless the owner says "anyway" for it.
  if (*mode == config::Mode::Bypass) {
    nlohmann::json paused = nlohmann::json::array();
    std::string anyway = body.value("anywayInSession", "");
    for (auto& s : p_.store.sessions(agent)) {
      if (!s.tainted) continue;
      if (s.session == anyway) {
        s.bypassAnyway = true;
        p_.store.putSession(s);
        audit("mode.bypass_anyway", {{"agent", agent}, {"session", s.session}});
      } else if (!p_.config->pine.security.bypassWhenTainted) {
        paused.push_back(s.session);
      }
    }
    if (!paused.empty()) {
      reply["pausedIn"] = paused;
      reply["note"] = "bypass is paused in sessions that have read outside content; reset them, or set "
                      "anywayInSession to choose bypass in one of them anyway";
    }
  } else {
    for (auto& s : p_.store.sessions(agent))
      if (s.bypassAnyway) {
        s.bypassAnyway = false;  // "anyway" holds until the mode changes
        p_.store.putSession(s);
      }
  }
  audit("mode.set", {{"agent", agent}, {"mode", config::enumName(*mode)}});
  return {200, reply};
}

ApiReply OwnerApi::approvals(const ApiQuery& query) {
  bool all = query.count("all") && query.at("all") != "false" && query.at("all") != "0";
  nlohmann::json list = nlohmann::json::array();
  for (auto& a : p_.store.approvals(!all, 200)) list.push_back(Approvals::toJson(a));
  return {200, {{"approvals", list}}};
}

ApiReply OwnerApi::answer(const std::string& id, bool approved, bool always) {
  if (auto refused = p_.approvals.decide(id, approved, always, "owner")) {
    // Closed with its task (it ended, or was not resumed after a restart): nothing waits for it any more.
    int status = refused->why == AnswerRefused::Why::Closed ? 410 : 409;
    return apiError(status, refused->message);
  }
  return {200, Approvals::toJson(*p_.store.approval(id))};
}

ApiReply OwnerApi::approve(const std::string& id, bool always) { return answer(id, true, always); }

ApiReply OwnerApi::deny(const std::string& id) { return answer(id, false, false); }

// The owner stops a task (POST /v1/tasks/{id}/cancel, pinectl cancel).
ApiReply OwnerApi::cancelTask(const std::string& id) {
  switch (p_.queue.cancel(id)) {
    case TaskQueue::Cancel::Unknown: return apiError(404, "no task '" + id + "'");
    case TaskQueue::Cancel::AlreadyEnded: {
      auto* t = p_.queue.find(id);
      return apiError(409, "task " + id + " has already ended (" + (t ? toString(t->state) : "ended") + ")");
    }
    case TaskQueue::Cancel::Cancelled: break;
  }
  return {200, {{"task", id}, {"cancelled", true}}};
}

ApiReply OwnerApi::schedules() {
  nlohmann::json list = nlohmann::json::array();
  for (auto& s : p_.config->pine.schedules) {
    std::string error;
    auto last = p_.store.lastRun(s.name);
    auto next = p_.schedules.nextRunMs(s, &error);
    nlohmann::json j = {{"id", s.name}, {"name", s.name}, {"agent", s.agent}, {"task", s.task},
                        {"when", schedule::describeSchedule(s)}};
    if (!s.cron.empty()) j["cron"] = s.cron;
    if (s.intervalSec) j["intervalSec"] = s.intervalSec;
    if (!s.timezone.empty()) j["timezone"] = s.timezone;
    j["last"] = last ? nlohmann::json(isoTime(*last)) : nlohmann::json(nullptr);
    j["next"] = next ? nlohmann::json(isoTime(*next)) : nlohmann::json(nullptr);
    if (!error.empty()) j["error"] = error;
    list.push_back(j);
  }
  return {200, {{"schedules", list}}};
}

ApiReply OwnerApi::getState(const std::string& key) {
  if (!isValidStateKey(key)) return apiError(400, "state keys are 1 to 128 characters of [A-Za-z0-9_./-]");
  auto row = p_.store.state(key);
  if (!row) return apiError(404, "no state '" + key + "'");
  auto v = nlohmann::json::parse(row->value, nullptr, false);
  return {200, {{"key", key}, {"value", v.is_discarded() ? nlohmann::json(row->value) : v},
                {"updatedAt", isoTime(row->updatedMs)}, {"updatedBy", row->updatedBy}}};
}

ApiReply OwnerApi::putState(const std::string& key, const nlohmann::json& body) {
  if (!isValidStateKey(key)) return apiError(400, "state keys are 1 to 128 characters of [A-Za-z0-9_./-]");
  if (!body.is_object() || !body.contains("value")) return apiError(400, "the body must be {\"value\": <any JSON>}");
  std::string value = body["value"].dump();
  if (value.size() > (64u << 10)) return apiError(413, "a state value is at most 64 KiB of JSON");
  p_.writeOwnerState(key, value);
  return {200, {{"key", key}, {"value", body["value"]}}};
}

}  // namespace pine
