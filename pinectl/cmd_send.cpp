#include "common/names.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {

std::string formatApproval(const nlohmann::json& a) {
  std::string id = a.value("id", "?");
  std::string args = a.contains("args") ? (a["args"].is_string() ? a["args"].get<std::string>() : a["args"].dump()) : "";
  std::string s = "approval " + id + ": " + a.value("agent", "?") + " wants " + a.value("tool", "?") + " " + args + "\n";
  if (a.contains("reason") && a["reason"].is_string() && !a["reason"].get<std::string>().empty())
    s += "  reason: " + a["reason"].get<std::string>() + "\n";
  if (a.value("tainted", false)) s += "  this conversation has read outside content\n";
  s += "  answer: pinectl approve " + id + (a.value("alwaysOffered", false) ? " [--always]" : "") +
       "  |  pinectl deny " + id + "\n";
  return s;
}

static int printResult(const nlohmann::json& t, bool json, std::ostream& out, std::ostream& err) {
  bool done = t.value("state", "") == "done";
  if (json) out << t.dump(2) << "\n";
  else if (done) out << t.value("answer", "") << "\n";
  else err << "task " << t.value("id", "") << " " << t.value("state", "failed") << ": " << t.value("error", "") << "\n";
  return done ? 0 : 1;
}

int cmdSend(const std::string& home, const std::string& target, const std::string& text, bool wait, bool json,
            std::ostream& out, std::ostream& err) {
  const size_t slash = target.find('/');
  const std::string agent = target.substr(0, slash);
  nlohmann::json body = {{"text", text}};
  if (slash != std::string::npos) body["session"] = target.substr(slash + 1);  // the broker checks its form
  if (!isValidAgentId(agent)) {
    err << "pinectl: '" << agent << "' is not an agent id: agent ids are [a-z0-9_-], 1 to 64 bytes\n";
    return 1;
  }
  ControlClient client(home);
  std::string path = "/v1/agents/" + urlEncode(agent) + "/messages";
  if (!wait) {
    body["wait"] = false;
    HttpResult r = client.request("POST", path, body.dump());
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (r.status != 202 || !j.is_object()) {
      err << "pinectl: " << (j.is_object() ? j.value("error", "the request failed") : "pine answered " + std::to_string(r.status)) << "\n";
      return 1;
    }
    if (json) out << j.dump(2) << "\n";
    else out << "task " << j.value("task", "") << " started (session " << j.value("session", "?") << ")\n";
    return 0;
  }
  int exitCode = -1;
  std::string taskId;
  body["stream"] = true;
  HttpResult r = client.stream("POST", path, body.dump(),
                               [&](const SseEvent& e) {
                                 auto d = nlohmann::json::parse(e.data, nullptr, false);
                                 if (!d.is_object()) return true;
                                 if (e.event == "task") {
                                   taskId = d.value("task", "");
                                   err << "task " << taskId << " (session " << d.value("session", "?") << ")\n";
                                 } else if (e.event == "progress") {
                                   err << "  " << d.value("text", "") << "\n";
                                 } else if (e.event == "approval" && d.contains("approval")) {
                                   auto& a = d["approval"];
                                   std::string state = a.value("state", "pending");
                                   if (state == "pending") err << formatApproval(a);
                                   else err << "approval " << a.value("id", "?") << ": " << state << "\n";
                                 } else if (e.event == "overflow") {
                                   err << "  (progress lines were skipped: this terminal fell behind)\n";
                                 } else if (e.event == "done") {
                                   exitCode = printResult(d, json, out, err);
                                   return false;
                                 }
                                 err.flush();
                                 return true;
                               });
  if (r.status != 200) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    err << "pinectl: " << (j.is_object() ? j.value("error", "the request failed") : "pine answered " + std::to_string(r.status)) << "\n";
    return 1;
  }
  if (exitCode < 0) {
    err << "pinectl: the answer stream ended before task " << taskId << " did; `pinectl tasks` shows how it ended\n";
    return 1;
  }
  return exitCode;
}

}  // namespace pine
