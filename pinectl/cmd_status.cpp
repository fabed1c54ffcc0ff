#include <cstdio>
#include <iostream>

#include "pinectl/api_call.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {

std::string formatDuration(double seconds) {
  long s = seconds < 0 ? 0 : (long)seconds;
  char buf[32];
  if (s < 60) snprintf(buf, sizeof buf, "%lds", s);
  else if (s < 3600) snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else if (s < 86400) snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  else snprintf(buf, sizeof buf, "%ldd%02ldh", s / 86400, (s % 86400) / 3600);
  return buf;
}

static nlohmann::json getJson(const std::string& home, const std::string& path, int& status) {
  ControlClient client(home);
  HttpResult r = client.request("GET", path);
  status = r.status;
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error("pine answered " + std::to_string(r.status) + " with no JSON");
  return j;
}

int cmdStatus(const std::string& home, bool json) {
  int status = 0;
  auto j = getJson(home, "/v1/status", status);
  if (status != 200) {
    std::cerr << "pinectl: " << j.value("error", "status failed") << "\n";
    return 1;
  }
  if (json) {
    addStatusSections(home, j, nullptr);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "home " << j.value("home", "") << "\n\n";
  printf("%-11s %8s  %8s  %8s  %s\n", "ROLE", "PID", "UPTIME", "RESTARTS", "TASK");
  for (auto& p : j["processes"]) {
    std::string task = p.contains("task") ? p["task"].get<std::string>() + " (" + p.value("agent", "") + ")" : "";
    printf("%-11s %8d  %8s  %8u  %s\n", p.value("role", "").c_str(), p.value("pid", 0),
           formatDuration(p.value("uptimeSeconds", 0.0)).c_str(), p.value("restarts", 0u), task.c_str());
  }
  auto& tasks = j["tasks"];
  std::cout << "\n" << tasks.size() << (tasks.size() == 1 ? " task" : " tasks") << " running\n";
  for (auto& t : tasks)
    std::cout << "  " << t.value("id", "") << "  " << t.value("agent", "") << "  " << t.value("state", "")
              << "  worker " << t.value("workerPid", 0) << "  sandbox " << t.value("sandbox", "?") << "\n";
  for (auto& c : j.value("channels", nlohmann::json::array())) {
    std::cout << "\n" << c.value("type", "") << " " << c.value("source", "") << ": " << c.value("state", "");
    if (c.contains("detail")) std::cout << ": " << c["detail"].get<std::string>();
    if (c.contains("lastPollAt")) std::cout << " (last poll " << c["lastPollAt"].get<std::string>() << ")";
  }
  if (j.contains("channels") && !j["channels"].empty()) std::cout << "\n";
  auto api = j.value("api", nlohmann::json::object());
  std::cout << "\ncontrol API: unix " << (api.contains("unix") && api["unix"].is_string() ? api["unix"].get<std::string>() : "-");
  if (api.contains("http") && api["http"].is_object())
    std::cout << ", http " << api["http"].value("host", "?") << ":" << api["http"].value("port", 0);
  std::cout << "\n";
  if (api.contains("httpProblem") && api["httpProblem"].is_string())
    std::cout << "  not over TCP: " << api["httpProblem"].get<std::string>() << "\n";
  addStatusSections(home, j, &std::cout);
  return 0;
}

int cmdCancel(const std::string& home, const std::string& task, std::ostream& out, std::ostream& err) {
  auto a = callApi(home, "POST", "/v1/tasks/" + urlEncode(task) + "/cancel", nlohmann::json::object());
  if (!a.ok()) return reportFailure(a, err);
  out << "task " << task << ": cancelled\n";
  return 0;
}

int cmdTasks(const std::string& home, bool json) {
  int status = 0;
  auto j = getJson(home, "/v1/tasks", status);
  if (status != 200) {
    std::cerr << "pinectl: " << j.value("error", "tasks failed") << "\n";
    return 1;
  }
  if (json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  for (auto& t : j["tasks"]) {
    std::cout << t.value("id", "") << "  " << t.value("agent", "") << "  " << t.value("state", "");
    if (t.contains("error")) std::cout << "  " << t["error"].get<std::string>();
    std::cout << "\n";
  }
  return 0;
}

}  // namespace pine
