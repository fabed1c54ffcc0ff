// The broker's side of the control API (broker/api_backend.h): what each route
// reads or changes. The HTTP side and the owner checks are in control_api.cpp.
#include <kj/debug.h>

#include "broker/broker.h"
#include "broker/schedule/describe.h"
#include "broker/schedule/next_run.h"
#include "common/log.h"
#include "common/names.h"

namespace pine {
namespace {

long long queryInt(const ApiQuery& q, const char* name, long long dflt) {
  auto it = q.find(name);
  if (it == q.end() || it->second.empty()) return dflt;
  try {
    return std::stoll(it->second);
  } catch (...) {
    throw std::invalid_argument(std::string("query parameter '") + name + "' must be a number");
  }
}

std::optional<config::Mode> parseMode(const std::string& s) {
  if (s == "manual") return config::Mode::Manual;
  if (s == "auto") return config::Mode::Auto;
  if (s == "bypass") return config::Mode::Bypass;
  return std::nullopt;
}

}  // namespace

kj::Promise<ApiReply> Broker::status() {
  return supervisor_.statusRequest().send().then(
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
        for (auto* t : tasks_.active()) active.push_back(t->toJson());
        return ApiReply{200,
                        {{"home", home_.root},
                         {"processes", procs},
                         {"tasks", active},
                         {"pendingApprovals", store_->approvals(true, 1000).size()}}};
      },
      [](kj::Exception&& e) { return apiError(502, "pined did not answer: " + describeRemote(e)); });
}

kj::Promise<ApiReply> Broker::reload() {
  return supervisor_.reloadConfigRequest().send().then([this](auto&& r) {
    nlohmann::json errors = nlohmann::json::array();
    for (auto e : r.getErrors()) errors.push_back(std::string(e.cStr()));
    if (errors.empty()) reloadConfiguration();  // pined validated it: the broker reads the same files
    return ApiReply{200, {{"ok", errors.empty()}, {"errors", errors}}};
  });
}

ApiReply Broker::tasks(const ApiQuery& query) {
  long long limit;
  try {
    limit = std::clamp<long long>(queryInt(query, "limit", 100), 1, 1000);
  } catch (std::exception& e) {
    return apiError(400, e.what());
  }
  auto agentIt = query.find("agent");
  auto stateIt = query.find("state");
  nlohmann::json list = nlohmann::json::array();
  for (auto& r : store_->tasks((int)limit, agentIt == query.end() ? "" : agentIt->second,
                               stateIt == query.end() ? "" : stateIt->second)) {
    // Live tasks say more (worker pid, sandbox) than their stored row.
    if (auto* t = tasks_.find(r.id)) {
      list.push_back(t->toJson());
      continue;
    }
    nlohmann::json j = {{"id", r.id},         {"agent", r.agent}, {"session", r.session}, {"trust", r.trust},
                        {"state", r.state},   {"createdAt", isoTime(r.createdMs)}};
    if (r.endedMs) j["endedAt"] = isoTime(r.endedMs);
    if (r.state == "done") j["answer"] = r.answer;
    if (!r.error.empty()) j["error"] = r.error;
    if (r.tokensIn || r.tokensOut) j["usage"] = {{"input", r.tokensIn}, {"output", r.tokensOut}, {"cost", r.cost}};
    list.push_back(j);
  }
  return {200, {{"tasks", list}}};
}

ApiReply Broker::listEvents(const ApiQuery& query) {
  store::EventQuery q;
  std::string pattern;
  try {
    q.afterSeq = queryInt(query, "after", 0);
    q.sinceMs = queryInt(query, "since", 0);
    q.limit = (int)std::clamp<long long>(queryInt(query, "limit", 100), 1, 1000);
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
    q.topicPrefix = pattern.substr(0, pattern.find_first_of("+#*"));
  }
  nlohmann::json list = nlohmann::json::array();
  // A wildcard pattern narrows in SQL by its literal prefix, then here exactly.
  while (true) {
    auto batch = store_->events(q);
    for (auto& e : batch) {
      if (pattern.empty() || policy::topicMatches(pattern, e.topic)) list.push_back(eventJson(e));
      if ((int)list.size() >= q.limit) break;
    }
    if ((int)list.size() >= q.limit || (int)batch.size() < q.limit || pattern.empty()) break;
    q.afterSeq = batch.back().seq;
  }
  return {200, {{"events", list}}};
}

kj::Promise<ApiReply> Broker::publishEvent(const nlohmann::json& body) {
  // One event {"topic", "payload"}, or a batch {"events": [...]} committed in one transaction.
  bool batch = body.is_object() && body.contains("events");
  const nlohmann::json items = batch ? body["events"] : nlohmann::json::array({body});
  if (!items.is_array() || items.empty() || items.size() > 1000)
    return apiError(400, "\"events\" must be a list of 1 to 1000 events like {\"topic\": \"...\", \"payload\": ...}");
  std::vector<store::Event> drafts;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& item = items[i];
    std::string where = batch ? "events[" + std::to_string(i) + "]: " : "";
    if (!item.is_object() || !item.contains("topic") || !item["topic"].is_string())
      return apiError(400, where + "the body must be {\"topic\": \"...\", \"payload\": ...}");
    std::string topic = item["topic"].get<std::string>();
    if (auto why = policy::validateTopic(topic)) return apiError(400, where + "topic '" + topic + "': " + *why);
    if (policy::isReservedTopic(topic))
      return apiError(403, where + "topic '" + topic + "' is pine's own (agent/, approval/, pine/, state/, timer/): use another");
    store::Event e;
    e.topic = topic;
    e.source = "owner";
    e.origin = "control-api";
    e.trust = "owner";  // the control API authenticated the owner
    e.payload = item.contains("payload") ? item["payload"].dump() : "null";
    drafts.push_back(std::move(e));
  }
  kj::Vector<kj::Promise<store::Event>> promises;
  for (auto& d : drafts) promises.add(bus_->publish(std::move(d)));  // same loop turn: one transaction
  return kj::joinPromises(promises.releaseAsArray())
      .then(
          [batch](kj::Array<store::Event> committed) {
            if (!batch) return ApiReply{200, {{"event", eventJson(committed[0])}}};
            nlohmann::json list = nlohmann::json::array();
            for (auto& c : committed) list.push_back(eventJson(c));
            return ApiReply{200, {{"events", list}}};
          },
          [](kj::Exception&& ex) { return apiError(503, "not stored: " + describeRemote(ex)); });
}

ApiReply Broker::agents() {
  nlohmann::json list = nlohmann::json::array();
  for (auto& [id, a] : config_->agents) {
    nlohmann::json sessions = nlohmann::json::array();
    for (auto& s : store_->sessions(id))
      sessions.push_back({{"session", s.session}, {"tainted", s.tainted}, {"taintReason", s.taintReason}});
    auto o = modeOverrides_.find(id);
    config::Mode mode = o != modeOverrides_.end() ? o->second : config_->effectiveMode(a);
    nlohmann::json active = nlohmann::json::array();
    for (auto* t : tasks_.active())
      if (t->agent == id) active.push_back(t->id);
    list.push_back({{"id", id},
                    {"description", a.description},
                    {"mode", config::enumName(mode)},
                    {"configuredMode", config::enumName(config_->effectiveMode(a))},
                    {"model", config_->effectiveModel(a)},
                    {"tools", a.tools},
                    {"sessions", sessions},
                    {"activeTasks", active}});
  }
  return {200, {{"agents", list}}};
}

ApiReply Broker::sendMessage(const std::string& agent, const nlohmann::json& body) {
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
  auto s = submit(r);
  if (s.taskId.empty()) return apiError(s.status, s.error);
  return {200, {{"task", s.taskId}, {"session", s.session}}};
}

kj::Promise<ApiReply> Broker::taskResult(const std::string& taskId) {
  return whenEnded(taskId).then([this, taskId](const TaskRecord* t) -> ApiReply {
    if (t) return {200, t->toJson()};
    auto row = store_->task(taskId);
    if (!row) return apiError(404, "no task '" + taskId + "'");
    nlohmann::json j = {{"id", row->id}, {"agent", row->agent}, {"state", row->state}, {"session", row->session}};
    if (row->state == "done") j["answer"] = row->answer;
    if (!row->error.empty()) j["error"] = row->error;
    return {200, j};
  });
}

ApiReply Broker::resetAgent(const std::string& agent, const nlohmann::json& body) {
  if (!config_->agents.count(agent)) return apiError(404, "no agent '" + agent + "'");
  std::vector<std::string> sessions;
  if (body.is_object() && body.contains("session")) {
    if (!body["session"].is_string()) return apiError(400, "\"session\" must be a string");
    sessions.push_back(body["session"].get<std::string>());
  } else {
    for (auto& s : store_->sessions(agent)) sessions.push_back(s.session);
  }
  for (auto& s : sessions) {
    store_->resetSession(agent, s);
    audit("session.reset", {{"agent", agent}, {"session", s}});
  }
  return {200, {{"agent", agent}, {"reset", sessions}}};
}

ApiReply Broker::setMode(const std::string& agent, const nlohmann::json& body) {
  auto it = config_->agents.find(agent);
  if (it == config_->agents.end()) return apiError(404, "no agent '" + agent + "'");
  if (!body.is_object() || !body.contains("mode") || !body["mode"].is_string())
    return apiError(400, "the body must be {\"mode\": \"manual|auto|bypass\"}");
  auto mode = parseMode(body["mode"].get<std::string>());
  if (!mode) return apiError(400, "mode must be manual, auto or bypass");
  modeOverrides_[agent] = *mode;
  nlohmann::json reply = {{"agent", agent}, {"mode", config::enumName(*mode)}, {"until", "the daemon restarts"}};
  // Bypass in a conversation that has read outside content is paused unless the owner says "anyway" for it.
  if (*mode == config::Mode::Bypass) {
    nlohmann::json paused = nlohmann::json::array();
    std::string anyway = body.value("anywayInSession", "");
    for (auto& s : store_->sessions(agent)) {
      if (!s.tainted) continue;
      if (s.session == anyway) {
        s.bypassAnyway = true;
        store_->putSession(s);
        audit("mode.bypass_anyway", {{"agent", agent}, {"session", s.session}});
      } else if (!config_->pine.security.bypassWhenTainted) {
        paused.push_back(s.session);
      }
    }
    if (!paused.empty()) {
      reply["pausedIn"] = paused;
      reply["note"] = "bypass is paused in sessions that have read outside content; reset them, or set "
                      "anywayInSession to choose bypass in one of them anyway";
    }
  } else {
    for (auto& s : store_->sessions(agent))
      if (s.bypassAnyway) {
        s.bypassAnyway = false;  // "anyway" holds until the mode changes
        store_->putSession(s);
      }
  }
  audit("mode.set", {{"agent", agent}, {"mode", config::enumName(*mode)}});
  return {200, reply};
}

ApiReply Broker::approvals(const ApiQuery& query) {
  bool all = query.count("all") && query.at("all") != "false" && query.at("all") != "0";
  nlohmann::json list = nlohmann::json::array();
  for (auto& a : store_->approvals(!all, 200)) list.push_back(Approvals::toJson(a));
  return {200, {{"approvals", list}}};
}

ApiReply Broker::approve(const std::string& id, bool always) {
  if (auto why = approvals_->decide(id, true, always, "owner")) return apiError(409, *why);
  return {200, Approvals::toJson(*store_->approval(id))};
}

ApiReply Broker::deny(const std::string& id) {
  if (auto why = approvals_->decide(id, false, false, "owner")) return apiError(409, *why);
  return {200, Approvals::toJson(*store_->approval(id))};
}

ApiReply Broker::schedules() {
  nlohmann::json list = nlohmann::json::array();
  for (auto& s : config_->pine.schedules) {
    std::string error;
    auto last = store_->lastRun(s.name);
    auto next = schedule::nextRunMs(s, last.value_or(0), startedMs_, nowMs(), &error);
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

ApiReply Broker::getState(const std::string& key) {
  if (!isValidStateKey(key)) return apiError(400, "state keys are 1 to 128 characters of [A-Za-z0-9_./-]");
  auto row = store_->state(key);
  if (!row) return apiError(404, "no state '" + key + "'");
  auto v = nlohmann::json::parse(row->value, nullptr, false);
  return {200, {{"key", key}, {"value", v.is_discarded() ? nlohmann::json(row->value) : v},
                {"updatedAt", isoTime(row->updatedMs)}, {"updatedBy", row->updatedBy}}};
}

ApiReply Broker::putState(const std::string& key, const nlohmann::json& body) {
  if (!isValidStateKey(key)) return apiError(400, "state keys are 1 to 128 characters of [A-Za-z0-9_./-]");
  if (!body.is_object() || !body.contains("value")) return apiError(400, "the body must be {\"value\": <any JSON>}");
  std::string value = body["value"].dump();
  if (value.size() > (64u << 10)) return apiError(413, "a state value is at most 64 KiB of JSON");
  background_.add(writeState(key, value, "owner", config::Trust::Owner).ignoreResult());
  return {200, {{"key", key}, {"value", body["value"]}}};
}

}  // namespace pine
