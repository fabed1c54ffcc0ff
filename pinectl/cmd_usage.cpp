// pinectl usage [--agent A] [--since D] [-n N] [--json]: tokens in and out, cache reads and
// writes, and the estimated cost per agent, per day and per task (GET /v1/usage), then each
// budget against today's use, those reached first. Exit 0 shown, 1 refused or failed (an
// unknown agent, pine down), 2 a --since pine cannot read.
#include <time.h>

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <regex>
#include <sstream>

#include "pinectl/api_call.h"
#include "pinectl/commands.h"
#include "pinectl/http_client.h"

namespace pine {
namespace {

std::string money(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// "unknown" when some tokens had no price (with the priced part, when there is one).
std::string cost(const nlohmann::json& u) {
  if (u.contains("cost") && u["cost"].is_number()) return money(u["cost"].get<double>());
  if (u.contains("pricedCost")) return "unknown (" + money(u["pricedCost"].get<double>()) + " priced)";
  return "unknown";
}

long long count(const nlohmann::json& u, const char* key) { return u.value(key, 0LL); }

void header(std::ostream& out, const std::string& first, int width) {
  out << std::left << std::setw(width) << first << std::right << std::setw(6) << "tasks" << std::setw(12) << "input"
      << std::setw(10) << "output" << std::setw(12) << "cache read" << std::setw(12) << "cache write" << "  cost\n";
}

void row(std::ostream& out, const std::string& first, int width, long long tasks, const nlohmann::json& u) {
  out << std::left << std::setw(width) << first << std::right << std::setw(6) << tasks << std::setw(12)
      << count(u, "input") << std::setw(10) << count(u, "output") << std::setw(12) << count(u, "cacheRead")
      << std::setw(12) << count(u, "cacheWrite") << "  " << cost(u) << "\n";
}

// today, or N days ago ("7d"), as the date pine takes; anything else is passed on as written.
std::string sinceArgument(const std::string& since) {
  static const std::regex daysAgo(R"(^(\d{1,4})d$)");
  std::smatch m;
  int back = -1;
  if (since == "today") back = 0;
  else if (std::regex_match(since, m, daysAgo)) back = std::stoi(m[1].str());
  if (back < 0) return since;
  time_t t = time(nullptr) - (time_t)back * 86400;
  struct tm tm;
  localtime_r(&t, &tm);
  char buf[16];
  strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

void budgets(std::ostream& out, const nlohmann::json& list) {
  if (!list.is_array() || list.empty()) return;
  out << "\nbudgets (today, " << list[0].value("day", "") << ")\n";
  // Those reached first: they stop every run of the agent until tomorrow.
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& b : list) {
      bool reached = b.value("reached", false);
      if (reached != (pass == 0)) continue;
      out << "  " << b.value("agent", "?") << (reached ? ": REACHED, its runs are stopped until tomorrow" : "") << "\n";
      if (b.contains("tokensPerDay"))
        out << "    tokensPerDay  " << b["tokensPerDay"].value("used", 0LL) << " of "
            << b["tokensPerDay"].value("limit", 0LL) << (b["tokensPerDay"].value("reached", false) ? "  REACHED" : "")
            << "\n";
      if (b.contains("costPerDay"))
        out << "    costPerDay    " << money(b["costPerDay"].value("used", 0.0)) << " of "
            << money(b["costPerDay"].value("limit", 0.0)) << (b["costPerDay"].value("reached", false) ? "  REACHED" : "")
            << "\n";
      if (b.contains("costPerTask"))
        out << "    costPerTask   " << money(b["costPerTask"].value("limit", 0.0)) << " a task (today's costliest "
            << money(b["costPerTask"].value("costliestToday", 0.0)) << ")\n";
      if (reached && b.contains("why")) out << "    " << b["why"].get<std::string>() << "\n";
    }
}

}  // namespace

int cmdUsage(const std::string& home, const std::string& agent, const std::string& since, int tasks, bool json,
             std::ostream& out, std::ostream& err) {
  std::string path = "/v1/usage?limit=" + std::to_string(tasks);
  if (!agent.empty()) path += "&agent=" + urlEncode(agent);
  if (!since.empty()) path += "&since=" + urlEncode(sinceArgument(since));
  auto a = callApi(home, "GET", path);
  if (!a.ok()) {
    int code = reportFailure(a, err);
    // A --since pine cannot read is a command line error, as in `logs`.
    if (a.status == 400 && !since.empty()) {
      err << "pinectl: --since also takes today and a number of days ago (7d)\n";
      return 2;
    }
    return code;
  }
  if (json) {
    out << a.body.dump(2) << "\n";
    return 0;
  }
  const auto& b = a.body;
  out << "usage" << (agent.empty() ? "" : " of " + agent)
      << (b["since"].is_string() ? " since " + b["since"].get<std::string>() : std::string(", everything recorded"))
      << "; costs are estimates from models.yaml pricing\n\n";
  const auto& agents = b["agents"];
  header(out, "agent", 14);
  for (const auto& g : agents) row(out, g.value("agent", "?"), 14, g.value("tasks", 0LL), g["usage"]);
  if (agents.size() != 1) row(out, "total", 14, b["total"].value("tasks", 0LL), b["total"]["usage"]);

  const auto& days = b["days"];
  if (!days.empty()) {
    out << "\nby day\n";
    header(out, "day        agent", 26);
    size_t shown = 0;
    for (const auto& d : days) {
      if (++shown > 31) {
        out << "(" << days.size() - 31 << " more: --since or --json)\n";
        break;
      }
      std::string first = d.value("day", "?") + " " + d.value("agent", "?");
      row(out, first, 26, d.value("tasks", 0LL), d["usage"]);
    }
  }

  const auto& list = b["tasks"];
  if (!list.empty()) {
    long long all = b.value("tasksWithUsage", (long long)list.size());
    out << "\nmost recent tasks (" << list.size() << " of " << all << " that used a model; -n shows more)\n";
    out << std::left << std::setw(26) << "task" << std::setw(18) << "agent/session" << std::setw(9) << "state"
        << std::setw(18) << "created (UTC)" << std::right << std::setw(10) << "input" << std::setw(9) << "output"
        << std::setw(11) << "cache read" << std::setw(12) << "cache write" << "  cost\n";
    for (const auto& t : list) {
      std::string created = t.value("createdAt", "").substr(0, 16);
      const auto& u = t["usage"];
      out << std::left << std::setw(26) << t.value("id", "?") << std::setw(18)
          << (t.value("agent", "?") + "/" + t.value("session", "?")) << std::setw(9) << t.value("state", "?")
          << std::setw(18) << created << std::right << std::setw(10) << count(u, "input") << std::setw(9)
          << count(u, "output") << std::setw(11) << count(u, "cacheRead") << std::setw(12) << count(u, "cacheWrite")
          << "  " << cost(u) << "\n";
    }
  }
  budgets(out, b["budgets"]);
  return 0;
}

}  // namespace pine
