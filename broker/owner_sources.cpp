// The owner's view of the sources (pinectl sources) and the owner's subscriptions (pinectl
// subscribe, subscriptions, unsubscribe): a conversation subscribed by the owner hears a source
// exactly as one an agent subscribed with its subscribe tool (events arrive framed as data and
// mark the conversation, unless the source is marked trust: owner).
#include "broker/event_bus.h"
#include "broker/owner_api.h"
#include "broker/policy/setup_rules.h"
#include "common/log.h"
#include "common/names.h"

namespace pine {
namespace {

nlohmann::json subscriptionJson(const store::SubscriptionRow& s) {
  nlohmann::json j = {{"id", s.id},           {"agent", s.agent},         {"session", s.session},
                      {"source", s.source},   {"separate", s.separate},   {"throttleSec", s.throttleSec},
                      {"createdAt", isoTime(s.createdMs)}};
  if (!s.topic.empty()) j["topic"] = s.topic;
  if (s.lastDeliveredMs) j["lastDeliveredAt"] = isoTime(s.lastDeliveredMs);
  return j;
}

std::string names(const std::vector<std::string>& list) {
  std::string out;
  for (auto& n : list) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

}  // namespace

ApiReply OwnerApi::sources() {
  if (!p_.sourceFacts) return ApiBackend::sources();
  return {200, sourcesReport(*p_.config, p_.sourceFacts())};
}

ApiReply OwnerApi::subscriptions(const ApiQuery& query) {
  if (!p_.sourceFacts) return ApiBackend::subscriptions(query);
  auto agent = query.count("agent") ? query.at("agent") : std::string();
  nlohmann::json list = nlohmann::json::array();
  for (auto& s : p_.sourceFacts().subscriptions)
    if (agent.empty() || s.agent == agent) {
      list.push_back(subscriptionJson(s));
      // Kept, so that putting the source back restores it; said, since nothing arrives meanwhile.
      if (auto why = policy::heldSubscriptionReason(p_.config->pine.sources, s.source, s.agent))
        list.back()["held"] = *why;
    }
  return {200, {{"subscriptions", list}}};
}

ApiReply OwnerApi::subscribe(const nlohmann::json& body) {
  if (!p_.addSubscription) return ApiBackend::subscribe(body);
  auto text = [&](const char* key) -> std::optional<std::string> {
    if (!body.contains(key)) return std::string();
    if (!body[key].is_string()) return std::nullopt;
    return body[key].get<std::string>();
  };
  auto agent = text("agent"), session = text("session"), source = text("source"), topic = text("topic");
  if (!agent || !session || !source || !topic) return apiError(400, "agent, session, source and topic are strings");
  const auto& cfg = *p_.config;
  std::vector<std::string> agentIds;
  for (auto& [id, a] : cfg.agents) agentIds.push_back(id);
  if (agent->empty() || !cfg.agents.count(*agent))
    return apiError(404, "no agent '" + *agent + "'; the agents are: " + names(agentIds));
  if (session->empty()) *session = "main";
  if (!isValidTaskId(*session) || session->find('~') != std::string::npos)
    return apiError(400, "\"session\" must be [A-Za-z0-9_.-], 1 to 64 characters");
  const config::Source* src = nullptr;
  std::vector<std::string> sourceNames;
  for (auto& s : cfg.pine.sources) {
    sourceNames.push_back(s.name);
    if (s.name == *source) src = &s;
  }
  if (!src) return apiError(404, "no source '" + *source + "' in pine.yaml; the sources are: " + names(sourceNames));
  if (auto problem = policy::subscriptionProblem(*src, *agent, *topic))
    return apiError(!src->agent.empty() && src->agent != *agent ? 403 : 400, *problem);
  if (body.contains("separate") && !body["separate"].is_boolean())
    return apiError(400, "\"separate\" must be true or false");
  bool separate = body.value("separate", false);
  for (auto& s : p_.sourceFacts().subscriptions)
    if (s.agent == *agent && s.session == *session && s.source == *source && s.topic == *topic &&
        s.separate == separate)
      return {200, {{"subscription", subscriptionJson(s)}, {"existing", true}}};
  store::SubscriptionRow row;
  row.id = newId("s");
  row.agent = *agent;
  row.session = *session;
  row.source = *source;
  row.topic = *topic;
  row.separate = separate;
  row.throttleSec = cfg.pine.limits.subscriptionThrottleSec;
  row.createdMs = nowMs();
  p_.addSubscription(row);
  audit("subscription.add", {{"subscription", row.id}, {"agent", row.agent}, {"session", row.session},
                             {"source", row.source}, {"topic", row.topic}, {"separate", row.separate},
                             {"by", "owner"}});
  return {200, {{"subscription", subscriptionJson(row)}}};
}

ApiReply OwnerApi::unsubscribe(const std::string& id) {
  if (!p_.removeSubscription) return ApiBackend::unsubscribe(id);
  if (!p_.removeSubscription(id)) return apiError(404, "no subscription '" + id + "' (pinectl subscriptions lists them)");
  audit("subscription.remove", {{"subscription", id}, {"by", "owner"}});
  return {200, {{"subscription", id}, {"removed", true}}};
}

}  // namespace pine
