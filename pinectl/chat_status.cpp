// The status pinectl chat shows in its prompt: which conversation, and the agent's mode as the
// broker applies it to that conversation (GET /v1/agents).
#include <stdexcept>

#include "pinectl/api_call.h"
#include "pinectl/chat.h"

namespace pine {

std::string chatStatus(const ChatSession& c) {
  auto a = callApi(c.home, "GET", "/v1/agents");
  if (!a.ok()) throw std::runtime_error("pine did not list its agents (status " + std::to_string(a.status) + ")");
  std::string names;
  for (auto& agent : a.body.value("agents", nlohmann::json::array())) {
    std::string id = agent.value("id", "");
    names += (names.empty() ? "" : ", ") + id;
    if (id != c.agent) continue;
    std::string mode = agent.value("mode", "?");
    for (auto& s : agent.value("sessions", nlohmann::json::array()))
      if (s.value("session", "") == c.session && s.value("bypassPaused", false)) mode = "bypass (paused)";
    return c.agent + "/" + c.session + " [" + mode + "]";
  }
  throw std::runtime_error("no agent '" + c.agent + "'; the agents are: " + (names.empty() ? "(none)" : names));
}

}  // namespace pine
