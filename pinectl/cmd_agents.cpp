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

}  // namespace pine
