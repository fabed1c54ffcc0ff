// GET /v1/usage?agent=&since=&by=&limit= (pinectl usage): tokens and cost summed per agent, per
// local day and per task from the store (schema v10), and each budget of agent.yaml against
// today's use, with `reached` when the next model call would be refused (model_relay.cpp
// checks the same sums before every call).
#include <time.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "broker/owner_api.h"
#include "broker/policy/run_limits.h"
#include "broker/usage.h"
#include "common/log.h"

namespace pine {
namespace {

std::string localDay(long long ms) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  localtime_r(&t, &tm);
  char buf[16];
  strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// One agent's budgets against today's use; null when agent.yaml sets none.
nlohmann::json budgetJson(const config::AgentConfig& a, store::Store& store, long long todayMs) {
  const auto& b = a.budget;
  if (!b.tokensPerDay && !b.costPerDay && !b.costPerTask) return nullptr;
  store::Usage today = store.usageSince(a.id, todayMs);
  nlohmann::json j = {{"agent", a.id}, {"day", localDay(todayMs)}};
  bool reached = false;
  if (b.tokensPerDay) {
    bool r = today.tokens() >= *b.tokensPerDay;
    j["tokensPerDay"] = {{"limit", *b.tokensPerDay}, {"used", today.tokens()}, {"reached", r}};
    reached = reached || r;
  }
  if (b.costPerDay) {
    bool r = today.cost >= *b.costPerDay;
    j["costPerDay"] = {{"limit", *b.costPerDay}, {"used", today.cost}, {"reached", r}};
    if (!today.costKnown()) j["costPerDay"]["unpricedTokens"] = today.unpricedTokens;
    reached = reached || r;
  }
  // Per task: it stops the task that reaches it, never the next one; shown with today's costliest task.
  if (b.costPerTask)
    j["costPerTask"] = {{"limit", *b.costPerTask}, {"costliestToday", store.costliestTask(a.id, todayMs)}};
  j["reached"] = reached;
  // The words the run's refusal would use (policy::checkBudget decides both).
  if (auto why = policy::checkBudget(b, {today.tokens(), today.cost, 0})) j["why"] = *why;
  return j;
}

}  // namespace

ApiReply OwnerApi::usage(const ApiQuery& query) {
  const auto& cfg = *p_.config;
  auto param = [&](const char* name) {
    auto it = query.find(name);
    return it == query.end() ? std::string() : it->second;
  };
  const std::string agent = param("agent");
  if (!agent.empty() && !cfg.agents.count(agent)) {
    // An agent that left the configuration still has its history.
    if (p_.store.tasks(1, agent).empty()) {
      std::vector<std::string> ids;
      for (const auto& [id, a] : cfg.agents) ids.push_back(id);
      return apiError(404, "no agent '" + agent + "'; the agents are: " + joined(ids));
    }
  }
  long long sinceMs = 0;
  if (std::string since = param("since"); !since.empty()) {
    std::string why;
    auto ms = parseSince(since, why);
    if (!ms) return apiError(400, why);
    sinceMs = *ms;
  }
  std::set<std::string> by;
  if (std::string list = param("by"); !list.empty()) {
    std::stringstream ss(list);
    for (std::string part; std::getline(ss, part, ',');) {
      if (part != "agent" && part != "day" && part != "task")
        return apiError(400, "by '" + part + "' is not a grouping: use agent, day or task (or several, comma-separated)");
      by.insert(part);
    }
  } else {
    by = {"agent", "day", "task"};
  }
  long long limit = 20;
  if (std::string l = param("limit"); !l.empty()) {
    try {
      size_t used = 0;
      limit = std::stoll(l, &used);
      if (used != l.size()) throw std::invalid_argument(l);
    } catch (std::exception&) {
      return apiError(400, "limit '" + l + "' is not a number: the most recent tasks to list, 1 to 1000");
    }
    limit = std::clamp<long long>(limit, 1, 1000);
  }

  const long long todayMs = startOfTodayMs();
  nlohmann::json j = {{"agent", agent.empty() ? nlohmann::json(nullptr) : nlohmann::json(agent)},
                      {"since", sinceMs ? nlohmann::json(isoTime(sinceMs)) : nlohmann::json(nullptr)},
                      {"today", localDay(todayMs)}};
  long long taskCount = 0;
  nlohmann::json agents = nlohmann::json::array();
  for (const auto& g : p_.store.usageByAgent(agent, sinceMs)) {
    taskCount += g.tasks;
    agents.push_back({{"agent", g.agent}, {"tasks", g.tasks}, {"usage", usageJson(g.usage)}});
  }
  j["total"] = {{"tasks", taskCount}, {"usage", usageJson(p_.store.usageSince(agent, sinceMs))}};
  if (by.count("agent")) j["agents"] = agents;
  if (by.count("day")) {
    nlohmann::json days = nlohmann::json::array();
    for (const auto& g : p_.store.usageByDay(agent, sinceMs))
      days.push_back({{"day", g.day}, {"agent", g.agent}, {"tasks", g.tasks}, {"usage", usageJson(g.usage)}});
    j["days"] = days;
  }
  if (by.count("task")) {
    nlohmann::json tasks = nlohmann::json::array();
    for (const auto& t : p_.store.usageByTask(agent, sinceMs, (int)limit))
      tasks.push_back({{"id", t.id},
                       {"agent", t.agent},
                       {"session", t.session},
                       {"state", t.state},
                       {"createdAt", isoTime(t.createdMs)},
                       {"usage", usageJson(t.usage)}});
    j["tasks"] = tasks;
    j["tasksWithUsage"] = p_.store.tasksWithUsage(agent, sinceMs);
  }
  nlohmann::json budgets = nlohmann::json::array();
  for (const auto& [id, a] : cfg.agents) {
    if (!agent.empty() && id != agent) continue;
    if (auto b = budgetJson(a, p_.store, todayMs); !b.is_null()) budgets.push_back(b);
  }
  j["budgets"] = budgets;
  return {200, j};
}

}  // namespace pine
