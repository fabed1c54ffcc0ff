#include "pinectl/api_call.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {

int cmdMode(const std::string& home, const std::string& agent, const std::string& mode, std::ostream& out,
            std::ostream& err) {
  auto a = callApi(home, "PUT", "/v1/agents/" + urlEncode(agent) + "/mode", {{"mode", mode}});
  if (!a.ok()) return reportFailure(a, err);
  out << agent << ": mode " << a.body.value("mode", mode) << " (until the daemon restarts)\n";
  return 0;
}

int cmdReset(const std::string& home, const std::string& target, std::ostream& out, std::ostream& err) {
  size_t slash = target.find('/');
  std::string agent = target.substr(0, slash);
  nlohmann::json body = nlohmann::json::object();
  if (slash != std::string::npos) body["session"] = target.substr(slash + 1);
  auto a = callApi(home, "POST", "/v1/agents/" + urlEncode(agent) + "/reset", body);
  if (!a.ok()) return reportFailure(a, err);
  out << "reset " << agent << "/" << a.body.value("session", body.value("session", "main")) << "\n";
  return 0;
}

int cmdAgents(const std::string& home, bool json, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "GET", "/v1/agents");
  if (!a.ok()) return reportFailure(a, err);
  if (json) {
    out << a.body.dump(2) << "\n";
    return 0;
  }
  for (auto& g : a.body.value("agents", nlohmann::json::array())) {
    auto sessions = g.value("sessions", nlohmann::json::array());
    size_t tainted = 0;
    for (auto& s : sessions) tainted += s.value("tainted", false) ? 1 : 0;
    out << g.value("id", "?") << "  mode " << g.value("mode", "?") << "  model " << g.value("model", "?") << "  "
        << sessions.size() << (sessions.size() == 1 ? " conversation" : " conversations");
    if (tainted > 0) out << " (" << tainted << " read outside content)";
    auto active = g.value("activeTasks", nlohmann::json::array());
    if (!active.empty()) out << "  " << active.size() << " running";
    if (g.contains("description") && g["description"].is_string() && !g["description"].get<std::string>().empty())
      out << "\n  " << g["description"].get<std::string>();
    out << "\n";
  }
  return 0;
}

int cmdPublish(const std::string& home, const std::string& topic, const std::string& payloadJson, bool json,
               std::ostream& out, std::ostream& err) {
  auto payload = nlohmann::json::parse(payloadJson, nullptr, false);
  if (payload.is_discarded()) {
    err << "pinectl: the payload is not JSON: write it as JSON ('\"text\"', 42, '{\"open\": true}')\n";
    return 2;
  }
  auto a = callApi(home, "POST", "/v1/events", {{"topic", topic}, {"payload", payload}});
  if (!a.ok()) return reportFailure(a, err);
  if (json) out << a.body.dump(2) << "\n";
  else out << "event " << a.body["event"].value("seq", 0) << " on " << topic << "\n";
  return 0;
}

}  // namespace pine
