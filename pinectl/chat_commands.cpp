// pinectl chat's slash commands. Each goes through the control API route the matching pinectl
// command uses, for the conversation the chat is in.
#include <ostream>
#include <sstream>
#include <vector>

#include "common/names.h"
#include "pinectl/api_call.h"
#include "pinectl/chat.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {
namespace {

const char* kHelp =
    "/reset          start this conversation afresh (history, outside-content mark, grants, its folder)\n"
    "/mode MODE      switch the agent's mode: manual, auto or bypass (until pine restarts)\n"
    "/session NAME   go to another conversation of this agent (created by its first message)\n"
    "/folder DIR     open a folder of yours for this conversation; /folder alone shows it, /folder close closes it\n"
    "/usage          tokens and cost of this conversation's tasks\n"
    "/help           this list\n"
    "/quit           leave (Ctrl-D too); Ctrl-C stops waiting for an answer and cancels its task\n";

bool failed(ChatSession& c, const ApiAnswer& a) {
  if (a.ok()) return false;
  c.out << (a.body.is_object() ? a.body.value("error", "pine answered " + std::to_string(a.status))
                               : "pine answered " + std::to_string(a.status))
        << "\n";
  return true;
}

std::string agentPath(const ChatSession& c, const std::string& action) {
  return "/v1/agents/" + urlEncode(c.agent) + "/" + action;
}

void usage(ChatSession& c) {
  auto a = callApi(c.home, "GET", "/v1/tasks?agent=" + urlEncode(c.agent) + "&limit=1000");
  if (failed(c, a)) return;
  long long in = 0, out = 0, cacheRead = 0, cacheWrite = 0, counted = 0, tasks = 0, unpriced = 0;
  double cost = 0;
  std::string prefix = c.session + "+";  // its sub-agents' sessions count as this conversation
  for (auto& t : a.body.value("tasks", nlohmann::json::array())) {
    std::string s = t.value("session", "");
    if (s != c.session && s.rfind(prefix, 0) != 0) continue;
    tasks++;
    if (!t.contains("usage")) continue;
    counted++;
    const auto& u = t["usage"];
    in += u.value("input", 0LL);
    out += u.value("output", 0LL);
    cacheRead += u.value("cacheRead", 0LL);
    cacheWrite += u.value("cacheWrite", 0LL);
    // cost is null when the model had no pricing: unknown, never counted as 0.
    if (u.contains("cost") && u["cost"].is_number()) {
      cost += u["cost"].get<double>();
    } else {
      unpriced += u.value("unpricedTokens", 0LL);
      cost += u.value("pricedCost", 0.0);
    }
  }
  std::ostringstream money;
  money.setf(std::ios::fixed);
  money.precision(4);
  money << cost;
  c.out << c.agent << "/" << c.session << ": " << tasks << " tasks (the last 1000 of the agent), " << counted
        << " with usage recorded\n  tokens in " << in << ", out " << out << ", cache reads " << cacheRead
        << ", cache writes " << cacheWrite << "\n  cost "
        << (unpriced ? "unknown: " + std::to_string(unpriced) + " tokens of a model without pricing (" + money.str() +
                           " for the rest)"
                     : money.str())
        << " (an estimate from models.yaml pricing; pinectl usage has more)\n";
}

void folder(ChatSession& c, const std::string& arg) {
  if (arg.empty()) {
    auto a = callApi(c.home, "GET", agentPath(c, "folder") + "?session=" + urlEncode(c.session));
    if (failed(c, a)) return;
    std::string path = a.body.value("path", "");
    c.out << (path.empty() ? "no folder is open in this conversation\n" : "folder: " + path + "\n");
    return;
  }
  if (arg == "close") {
    auto a = callApi(c.home, "DELETE", agentPath(c, "folder"), nlohmann::json{{"session", c.session}});
    if (!failed(c, a)) c.out << "the folder is closed for this conversation\n";
    return;
  }
  auto a = callApi(c.home, "PUT", agentPath(c, "folder"), nlohmann::json{{"session", c.session}, {"path", absoluteFolder(arg)}});
  if (!failed(c, a))
    c.out << "folder " << a.body.value("path", arg) << " is open for " << c.agent << "/" << c.session
          << ": its runs start there and may read and write it\n";
}

}  // namespace

bool chatCommand(ChatSession& c, const std::string& line) {
  std::string name = line.substr(0, line.find(' '));
  std::string arg = line.size() > name.size() ? line.substr(name.size() + 1) : "";
  while (!arg.empty() && arg.front() == ' ') arg.erase(0, 1);
  while (!arg.empty() && arg.back() == ' ') arg.pop_back();
  if (name == "/quit" || name == "/exit") return false;
  if (name == "/help") {
    c.out << kHelp;
  } else if (name == "/reset") {
    if (!failed(c, callApi(c.home, "POST", agentPath(c, "reset"), nlohmann::json{{"session", c.session}})))
      c.out << "conversation " << c.agent << "/" << c.session << " starts afresh\n";
  } else if (name == "/mode") {
    if (arg.empty()) {
      c.out << "usage: /mode manual|auto|bypass\n";
    } else {
      auto a = callApi(c.home, "PUT", agentPath(c, "mode"), nlohmann::json{{"mode", arg}});
      if (!failed(c, a)) {
        c.out << c.agent << " is in " << a.body.value("mode", arg) << " mode until pine restarts\n";
        if (a.body.contains("note")) c.out << a.body.value("note", "") << "\n";
      }
    }
  } else if (name == "/session") {
    if (!isValidTaskId(arg)) c.out << "usage: /session NAME (letters, digits, '_', '.', '-'; 1 to 64)\n";
    else c.session = arg, c.out << "now in " << c.agent << "/" << c.session << "\n";
  } else if (name == "/folder") {
    folder(c, arg);
  } else if (name == "/usage") {
    usage(c);
  } else {
    c.out << "no command " << name << "; the commands are:\n" << kHelp;
  }
  c.out << std::flush;
  return true;
}

}  // namespace pine
