// What only the running daemon knows, added to `pinectl check`: an owner channel that does not
// work (a bot token Telegram refused, a server that keeps failing), the control API's TCP port in
// use, a source that is wanted and not running, an MCP server that failed to start. Nothing when
// pine is not running or cannot be asked: the configuration's own notes stand alone then.
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {

int printLiveNotes(const std::string& home, std::ostream& out) {
  nlohmann::json status;
  try {
    ControlClient client(home);
    HttpResult r = client.request("GET", "/v1/status");
    if (r.status != 200) return 0;
    status = nlohmann::json::parse(r.body, nullptr, false);
  } catch (std::exception&) {
    return 0;
  }
  if (!status.is_object()) return 0;
  int notes = 0;
  auto api = status.value("api", nlohmann::json::object());
  if (api.contains("httpProblem") && api["httpProblem"].is_string()) {
    out << "running pine: " << api["httpProblem"].get<std::string>() << "\n";
    notes++;
  }
  for (auto& c : status.value("channels", nlohmann::json::array())) {
    std::string state = c.value("state", "");
    if (state == "polling" || state == "starting") continue;
    out << "running pine: " << c.value("type", "") << " source '" << c.value("source", "") << "' is " << state;
    if (c.contains("detail")) out << ": " << c["detail"].get<std::string>();
    out << "\n";
    notes++;
  }
  auto listOf = [&](const char* route, const char* key) {
    try {
      ControlClient client(home);
      HttpResult r = client.request("GET", route);
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      if (r.status == 200 && j.is_object() && j.contains(key) && j[key].is_array()) return j[key];
    } catch (std::exception&) {
    }
    return nlohmann::json::array();
  };
  for (auto& s : listOf("/v1/sources", "sources")) {
    if (s.value("state", "") != "not running") continue;
    out << "running pine: source '" << s.value("name", "") << "' is not running";
    if (s.contains("why") && s["why"].is_string()) out << ": " << s["why"].get<std::string>();
    out << "\n";
    notes++;
  }
  for (auto& m : listOf("/v1/mcp", "servers")) {
    if (m.value("state", "") != "failed") continue;
    out << "running pine: MCP server '" << m.value("server", "") << "' of agent " << m.value("agent", "")
        << " failed to start";
    if (m.contains("error") && m["error"].is_string()) out << ": " << m["error"].get<std::string>();
    out << "\n";
    notes++;
  }
  return notes;
}

}  // namespace pine
