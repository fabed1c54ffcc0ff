// pinectl task ID: one task from the store (what was asked, how it ended, its answer) and, from
// the audit log, each tool call in order: the decision (allowed, refused, asked) with its
// reason, the owner's answer to a question, and what came of the call. A worker's tool results
// are its own report (Gate.ran), labelled as such. Exit 0 shown; 1 no such task or pine down.
#include <cerrno>
#include <fstream>
#include <iostream>

#include "common/home.h"
#include "pinectl/access_problem.h"
#include "pinectl/api_call.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {
namespace {

std::string field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// The audit lines of one task, oldest first; why the log could not be read otherwise.
std::vector<nlohmann::json> auditOfTask(const std::string& home, const std::string& id, std::string& why) {
  std::vector<nlohmann::json> out;
  const std::string path = Home{home}.audit();
  std::ifstream in(path);
  if (!in) {
    why = describeAccessProblem(home, path, errno);
    return out;
  }
  const std::string quoted = "\"" + id + "\"";
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(quoted) == std::string::npos) continue;  // most lines: no parse
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("task", "") == id) out.push_back(std::move(j));
  }
  return out;
}

// One audit event as a line of the task's story ("" for one that says nothing new).
std::string stepLine(const nlohmann::json& e) {
  const std::string event = e.value("event", ""), ts = field(e, "ts");
  const std::string when = ts.size() >= 19 ? ts.substr(11, 8) : ts;  // the time of day of an ISO time
  const std::string tool = field(e, "tool"), reason = field(e, "reason");
  if (event == "tool.decision") {
    std::string out = when + "  " + tool + " " + field(e, "args") + "\n          " + field(e, "decision");
    return out + (reason.empty() ? "" : ": " + reason);
  }
  if (event == "tool.result") {
    std::string out = when + "  -> " + (e.value("ok", false) ? "ok" : "failed");
    if (!field(e, "result").empty()) out += ": " + field(e, "result");
    return out + (e.value("by", "") == "worker" ? "  (as its worker reported)" : "");
  }
  if (event == "approval.request") return when + "  asked the owner (approval " + field(e, "approval") + "): " + reason;
  if (event == "approval.answer")
    return when + "  the owner's answer: " + field(e, "decision") + (e.value("always", false) ? " (always here)" : "");
  if (event == "process.start")
    return when + "  its worker started: sandbox " + field(e, "sandbox") + ", network " + field(e, "network") +
           (e.value("tainted", false) ? ", after outside content" : "");
  if (event == "process.exit") return when + "  its worker " + field(e, "how");
  if (event == "task.queued" || event == "task.start" || event == "task.end") return "";  // the header says it
  std::string out = when + "  " + event;
  for (auto& [k, v] : e.items())
    if (k != "ts" && k != "event" && k != "role" && k != "pid" && k != "task" && k != "agent" && k != "session")
      out += "  " + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

}  // namespace

int cmdTask(const std::string& home, const std::string& id, bool json, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "GET", "/v1/tasks/" + urlEncode(id));
  if (!a.ok()) return reportFailure(a, err);
  const auto& t = a.body["task"];
  std::string why;
  auto steps = auditOfTask(home, id, why);
  if (json) {
    nlohmann::json j = {{"task", t}, {"audit", steps}};
    if (!why.empty()) j["auditUnreadable"] = why;
    out << j.dump(2) << "\n";
    return 0;
  }
  out << "task " << id << "  " << field(t, "agent") << "/" << field(t, "session") << "  " << field(t, "state") << "  ("
      << field(t, "trust") << ")\n";
  out << "created " << field(t, "createdAt");
  if (t.contains("startedAt")) out << ", started " << field(t, "startedAt");
  if (t.contains("endedAt")) out << ", ended " << field(t, "endedAt");
  out << "\n";
  if (t.contains("usage")) {
    const auto& u = t["usage"];
    out << "tokens in " << u.value("input", 0LL) << ", out " << u.value("output", 0LL) << ", cache read "
        << u.value("cacheRead", 0LL) << ", cache write " << u.value("cacheWrite", 0LL) << "; cost "
        << (u.contains("cost") && u["cost"].is_number() ? u["cost"].dump() : std::string("unknown (no pricing)")) << "\n";
  }
  out << "asked:\n  " << field(t, "text") << "\n";
  if (!why.empty()) {
    out << "what it did: the audit log cannot be read: " << why << "\n";
  } else {
    bool any = false;
    for (const auto& e : steps) {
      std::string line = stepLine(e);
      if (line.empty()) continue;
      if (!any) out << "what it did:\n";
      any = true;
      out << "  " << line << "\n";
    }
    if (!any) out << "what it did: nothing in the audit log\n";
  }
  if (t.contains("changedFiles")) out << "changed " << t["changedFiles"] << " file(s) (pinectl changes " << id << ")\n";
  if (t.contains("answer")) out << "answer:\n" << field(t, "answer") << "\n";
  if (t.contains("error")) out << "error: " << field(t, "error") << "\n";
  return 0;
}

}  // namespace pine
