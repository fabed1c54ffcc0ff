// One message of pinectl chat: sent with the streaming send, its progress printed as it comes,
// each approval the task waits on asked inline (unless it is answered elsewhere first), and the
// answer. Ctrl-C while waiting cancels the task through the cancel route and says so.
#include <set>
#include <ostream>

#include "pinectl/api_call.h"
#include "pinectl/chat.h"
#include "pinectl/http_client.h"

namespace pine {
namespace {

// A progress line is "tool: decision"; anything but an allowed call is shown as a failure.
bool progressFailed(const std::string& text) {
  for (const char* word : {"refused", "denied", "failed", "error", "blocked", "timed_out", "cancelled"})
    if (text.find(word) != std::string::npos) return true;
  return false;
}

std::string approvalState(const std::string& home, const std::string& id, std::string* by) {
  auto a = callApi(home, "GET", "/v1/approvals?all=1");
  if (!a.ok()) return "pending";
  for (auto& item : a.body.value("approvals", nlohmann::json::array()))
    if (item.value("id", "") == id) {
      if (by) *by = item.value("decidedBy", "");
      return item.value("state", "pending");
    }
  return "pending";
}

// Asks the owner about one approval until they answer, it is answered elsewhere, or Ctrl-C.
void askApproval(ChatSession& c, const nlohmann::json& a) {
  std::string id = a.value("id", "");
  bool alwaysOffered = a.value("alwaysOffered", false);
  c.out << "\n? " << a.value("agent", "?") << " wants to run " << a.value("tool", "?") << " with:\n";
  const auto& args = a.contains("args") ? a["args"] : nlohmann::json();
  c.out << (args.is_string() ? args.get<std::string>() : args.dump(2)) << "\n";
  if (!a.value("reason", "").empty()) c.out << "  why it asks: " << a.value("reason", "") << "\n";
  if (a.value("tainted", false)) c.out << "  this conversation has read outside content\n";
  std::string question = std::string("allow once [y] / deny [n]") + (alwaysOffered ? " / always here [a]" : "") + "? ";
  c.out << question << std::flush;
  for (;;) {
    std::string line;
    bool timedOut = false;
    auto got = c.input.answer(1000, line, timedOut);
    if (got == ChatInput::Got::Interrupted) return;  // the turn sees the flag and cancels
    if (got == ChatInput::Got::End) {
      c.out << "\n(input ended: approval " << id << " is left for `pinectl approve|deny`)\n";
      return;
    }
    if (timedOut) {
      std::string by, state = approvalState(c.home, id, &by);
      if (state == "pending") continue;
      c.out << "\napproval " << id << ": " << state << (by.empty() ? "" : " by " + by) << " elsewhere\n" << std::flush;
      return;
    }
    std::string action;
    nlohmann::json body = nlohmann::json::object();
    if (line == "y" || line == "Y" || line == "yes") action = "approve";
    else if (line == "n" || line == "N" || line == "no") action = "deny";
    else if ((line == "a" || line == "A") && alwaysOffered) action = "approve", body["always"] = true;
    if (action.empty()) {
      c.out << (line == "a" || line == "A" ? "always is not offered for this call; " : "") << question << std::flush;
      continue;
    }
    auto r = callApi(c.home, "POST", "/v1/approvals/" + urlEncode(id) + "/" + action, body);
    if (!r.ok()) {
      // 409: someone answered first; their answer stands.
      c.out << "approval " << id << ": " << (r.body.is_object() ? r.body.value("error", "not answered") : "not answered")
            << "\n" << std::flush;
      return;
    }
    c.out << "approval " << id << ": " << (action == "approve" ? "allowed" : "denied")
          << (body.contains("always") ? " (always, in this conversation)" : action == "approve" ? " (once)" : "") << "\n"
          << std::flush;
    return;
  }
}

}  // namespace

void chatTurn(ChatSession& c, const std::string& text) {
  ControlClient client(c.home);
  client.setInterrupt(&chatInterrupted);
  chatInterrupted = 0;
  std::string task;
  bool ended = false;
  std::set<std::string> asked;
  nlohmann::json body = {{"text", text}, {"session", c.session}, {"stream", true}};
  HttpResult r = client.stream("POST", "/v1/agents/" + urlEncode(c.agent) + "/messages", body.dump(),
                               [&](const SseEvent& e) {
    auto d = nlohmann::json::parse(e.data, nullptr, false);
    if (!d.is_object()) return true;
    if (e.event == "task") {
      task = d.value("task", "");
    } else if (e.event == "progress") {
      std::string line = d.value("text", "");
      c.out << (progressFailed(line) ? "  ! " : "  . ") << line << "\n";
    } else if (e.event == "approval" && d.contains("approval")) {
      auto& a = d["approval"];
      std::string id = a.value("id", "");
      if (a.value("state", "") == "pending") {
        if (asked.insert(id).second) askApproval(c, a);
      } else if (!asked.count(id)) {
        c.out << "  approval " << id << ": " << a.value("state", "") << "\n";
      }
    } else if (e.event == "overflow") {
      c.out << "  (progress lines were skipped: this terminal fell behind)\n";
    } else if (e.event == "done") {
      ended = true;
      if (d.value("state", "") == "done") c.out << d.value("answer", "") << "\n";
      else c.out << "task " << d.value("id", task) << " " << d.value("state", "failed") << ": " << d.value("error", "") << "\n";
      c.out << std::flush;
      return false;
    }
    c.out << std::flush;
    return !chatInterrupted;
  });
  if (r.status != 200) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    c.out << "pinectl: " << (j.is_object() ? j.value("error", "the message was not taken") : "pine answered " + std::to_string(r.status))
          << "\n" << std::flush;
    return;
  }
  if (ended) return;
  if (chatInterrupted && !task.empty()) {
    auto cancel = callApi(c.home, "POST", "/v1/tasks/" + urlEncode(task) + "/cancel", nlohmann::json::object());
    if (cancel.ok()) c.out << "\nstopped: task " << task << " is cancelled (its worker was stopped)\n";
    else c.out << "\nstopped waiting; task " << task << " was not cancelled: "
               << (cancel.body.is_object() ? cancel.body.value("error", "") : std::to_string(cancel.status)) << "\n";
  } else {
    c.out << "\nthe answer stream ended before task " << task << " did; `pinectl tasks` shows how it ended\n";
  }
  chatInterrupted = 0;
  c.out << std::flush;
}

}  // namespace pine
