#include "broker/sources_report.h"

#include "common/log.h"

namespace pine {

namespace {

using json = nlohmann::json;

json wantedBy(const config::Home& home, const config::Source& s, const SourceFacts& facts) {
  json out = json::array();
  if (s.start == config::SourceStart::Always) out.push_back({{"start", "always"}});
  for (const auto& r : home.pine.routes)
    if (r.source == s.name) out.push_back({{"route", r.name}, {"agent", r.agent}});
  for (const auto& sub : facts.subscriptions)
    if (sub.source == s.name)
      out.push_back({{"subscription", sub.id}, {"agent", sub.agent}, {"session", sub.session},
                     {"separate", sub.separate}});
  return out;
}

void addStatus(json& entry, const std::string& name, const SourceFacts& facts) {
  entry["events"] = 0;
  entry["errors"] = 0;
  auto it = facts.status.find(name);
  if (it == facts.status.end()) return;
  const auto& st = it->second;
  if (st.lookedMs > 0) entry["lastLookAt"] = isoTime(st.lookedMs);
  if (!st.found.empty()) entry["found"] = st.found;
  if (st.eventMs > 0) entry["lastEventAt"] = isoTime(st.eventMs);
  entry["events"] = st.events;
  entry["errors"] = st.errors;
  if (!st.error.empty()) {
    entry["lastError"] = st.error;
    entry["lastErrorAt"] = isoTime(st.errorMs);
  }
}

}  // namespace

json sourcesReport(const config::Home& home, const SourceFacts& facts) {
  json list = json::array();
  for (const auto& s : home.pine.sources) {
    json e = {{"name", s.name},
              {"type", s.use.empty() ? s.type : "program"},
              {"trust", s.trust == config::Trust::Owner ? "owner" : "untrusted"},
              {"start", s.start == config::SourceStart::Always ? "always" : "subscribed"}};
    if (!s.agent.empty()) e["agent"] = s.agent;
    json wanted = wantedBy(home, s, facts);
    if (s.type == "webhook") {
      e["state"] = "listening";
    } else if (s.type == "telegram") {
      auto ch = facts.channels.find(s.name);
      e["state"] = ch == facts.channels.end() ? "not running" : ch->second;
      if (ch == facts.channels.end()) e["why"] = "the channel did not start (see pinectl status and the log)";
    } else if (facts.running.count(s.name)) {
      e["state"] = "running";
    } else if (auto why = facts.notRunning.find(s.name); why != facts.notRunning.end()) {
      e["state"] = "not running";
      e["why"] = why->second;
    } else if (wanted.empty()) {
      e["state"] = "idle";
      e["why"] = "nobody subscribes to it and no route names it (pinectl subscribe AGENT " + s.name +
                 ", or start: always)";
    } else {
      e["state"] = "starting";
    }
    e["wantedBy"] = wanted;
    addStatus(e, s.name, facts);
    list.push_back(e);
  }
  for (const auto& h : home.pine.webhooks) {
    json e = {{"name", h.name}, {"type", "webhook"}, {"trust", "untrusted"}, {"start", "always"},
              {"state", "listening"}, {"wantedBy", json::array()}};
    addStatus(e, h.name, facts);
    list.push_back(e);
  }
  return {{"sources", list}};
}

}  // namespace pine
