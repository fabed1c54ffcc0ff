// pinectl sources | subscriptions | subscribe | unsubscribe: what brings events in, whether it
// runs and why not, and which conversations hear it.
#include "pinectl/api_call.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {

namespace {

std::string wantedLine(const nlohmann::json& w) {
  if (w.contains("start")) return "start: always";
  if (w.contains("route")) return "route " + shownField(w, "route") + " (agent " + shownField(w, "agent") + ")";
  return "subscription " + shownField(w, "subscription") + " (" + shownField(w, "agent") + "/" + shownField(w, "session") +
         (w.value("separate", false) ? ", runs of their own" : "") + ")";
}

}  // namespace

int cmdSources(const std::string& home, bool json, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "GET", "/v1/sources");
  if (!a.ok()) return reportFailure(a, err);
  if (json) {
    out << a.body.dump(2) << "\n";
    return 0;
  }
  auto list = a.body.value("sources", nlohmann::json::array());
  if (list.empty()) out << "no sources (pine.yaml: sources, webhooks)\n";
  for (auto& s : list) {
    out << shownField(s, "name") << " (" << shownField(s, "type") << (s.contains("agent") ? ", agent " + shownField(s, "agent") : "")
        << ", " << shownField(s, "trust") << ")  " << shownField(s, "state") << "\n";
    if (s.contains("why")) out << "  why: " << shownField(s, "why") << "\n";
    std::string wanted;
    for (auto& w : s.value("wantedBy", nlohmann::json::array())) wanted += (wanted.empty() ? "" : "; ") + wantedLine(w);
    if (!wanted.empty()) out << "  wanted by: " << wanted << "\n";
    std::string seen;
    if (s.contains("lastLookAt"))
      seen = "last looked " + shownField(s, "lastLookAt") + (s.contains("found") ? ", found " + shownField(s, "found") : "") + "; ";
    seen += "last event " + shownField(s, "lastEventAt", "never") + "; " + shownField(s, "events", "0") + " events, " +
            shownField(s, "errors", "0") + " errors";
    out << "  " << seen << "\n";
    if (s.contains("lastError")) {
      out << "  last error " << shownField(s, "lastErrorAt") << ": " << shownField(s, "lastError");
      if (s.contains("lastLookAt") && s.value("lastLookAt", "") > s.value("lastErrorAt", "")) out << " (looked again since)";
      out << "\n";
    }
  }
  return 0;
}

int cmdSubscriptions(const std::string& home, const std::string& agent, bool json, std::ostream& out,
                     std::ostream& err) {
  auto a = callApi(home, "GET", "/v1/subscriptions" + (agent.empty() ? "" : "?agent=" + urlEncode(agent)));
  if (!a.ok()) return reportFailure(a, err);
  if (json) {
    out << a.body.dump(2) << "\n";
    return 0;
  }
  auto list = a.body.value("subscriptions", nlohmann::json::array());
  if (list.empty()) out << "no subscriptions\n";
  for (auto& s : list)
    out << shownField(s, "id") << "  " << shownField(s, "agent") << "/" << shownField(s, "session") << "  hears " << shownField(s, "source")
        << (s.contains("topic") ? " (topic " + shownField(s, "topic") + ")" : "")
        << (s.value("separate", false) ? ", in runs of their own" : "")
        << (s.contains("held") ? "  -- gets nothing: " + shownField(s, "held") : "") << "\n";
  return 0;
}

int cmdSubscribe(const std::string& home, const std::string& target, const std::string& source,
                 const std::string& topic, bool separate, bool json, std::ostream& out, std::ostream& err) {
  size_t slash = target.find('/');
  nlohmann::json body = {{"agent", target.substr(0, slash)}, {"source", source}, {"separate", separate}};
  if (slash != std::string::npos) body["session"] = target.substr(slash + 1);
  if (!topic.empty()) body["topic"] = topic;
  auto a = callApi(home, "POST", "/v1/subscriptions", body);
  if (!a.ok()) return reportFailure(a, err);
  if (json) {
    out << a.body.dump(2) << "\n";
    return 0;
  }
  auto s = a.body.value("subscription", nlohmann::json::object());
  out << (a.body.value("existing", false) ? "already subscribed (" : "subscribed (") << shownField(s, "id") << "): "
      << shownField(s, "agent") << "/" << shownField(s, "session") << " hears " << shownField(s, "source")
      << (separate ? " in runs of their own" : " as data in the conversation") << "\n";
  return 0;
}

int cmdUnsubscribe(const std::string& home, const std::string& id, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "DELETE", "/v1/subscriptions/" + urlEncode(id));
  if (!a.ok()) return reportFailure(a, err);
  out << "unsubscribed " << id << "\n";
  return 0;
}

}  // namespace pine
