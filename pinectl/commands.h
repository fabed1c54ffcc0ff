// pinectl's commands, one file each. Each returns the process exit status.
#pragma once
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace pine {

int cmdStatus(const std::string& home, bool json);
// status_sections.cpp: adds "approvals", "sources", "mcp", "subscriptions" to `status` (and
// "unavailable" for a route that failed); prints each as a section when `out` is given.
void addStatusSections(const std::string& home, nlohmann::json& status, std::ostream* out);
int cmdTasks(const std::string& home, bool json);
// One task: what was asked, its tool calls from the audit log (decisions, answers, results), its answer.
int cmdTask(const std::string& home, const std::string& id, bool json, std::ostream& out = std::cout,
            std::ostream& err = std::cerr);
// `agent` is AGENT or AGENT/SESSION (the main conversation without one).
// Streams the answer: progress lines and the approvals it waits on (with how to answer them) go to
// err, the answer to out. Exit 0 when the task is done, 1 when it failed or was refused.
int cmdSend(const std::string& home, const std::string& agent, const std::string& text, bool wait, bool json,
            std::ostream& out = std::cout, std::ostream& err = std::cerr);
// chat AGENT[/SESSION]: an interactive conversation (cmd_chat.cpp and chat_*.cpp). Exit 0 at /quit or EOF.
int cmdChat(const std::string& home, const std::string& target);
// folder AGENT[/SESSION] [DIR | close]: the folder opened for a conversation (cmd_folder.cpp).
int cmdFolder(const std::string& home, const std::string& target, const std::string& dir, bool close,
              std::ostream& out = std::cout, std::ostream& err = std::cerr);
// A folder as given, made absolute from the working directory.
std::string absoluteFolder(const std::string& dir);
// Pending approvals with their full arguments.
int cmdApprovals(const std::string& home, bool json, std::ostream& out = std::cout, std::ostream& err = std::cerr);
int cmdApprove(const std::string& home, const std::string& id, bool always, std::ostream& out = std::cout,
               std::ostream& err = std::cerr);
int cmdCancel(const std::string& home, const std::string& task, std::ostream& out = std::cout,
              std::ostream& err = std::cerr);
// What an ended task changed in its workspace (cmd_changes.cpp), and undoing it: exit 3 when files it
// changed were changed again later and force is off (nothing written).
int cmdChanges(const std::string& home, const std::string& task, bool json, std::ostream& out = std::cout,
               std::ostream& err = std::cerr);
int cmdUndo(const std::string& home, const std::string& task, bool force, bool json, std::ostream& out = std::cout,
            std::ostream& err = std::cerr);
// Tokens and estimated cost per agent, day and task, and budgets (cmd_usage.cpp): exit 2 for a
// --since pine cannot read. since: YYYY-MM-DD, an ISO time, today or Nd (days ago).
int cmdUsage(const std::string& home, const std::string& agent, const std::string& since, int tasks, bool json,
             std::ostream& out = std::cout, std::ostream& err = std::cerr);
int cmdDeny(const std::string& home, const std::string& id, std::ostream& out = std::cout,
            std::ostream& err = std::cerr);
int cmdMode(const std::string& home, const std::string& agent, const std::string& mode,
            std::ostream& out = std::cout, std::ostream& err = std::cerr);
// target: AGENT (its main conversation) or AGENT/SESSION.
int cmdReset(const std::string& home, const std::string& target, std::ostream& out = std::cout,
             std::ostream& err = std::cerr);
// Recent events; with follow, then new ones as they are committed, until interrupted.
int cmdEvents(const std::string& home, bool follow, const std::string& topic, bool json,
              std::ostream& out = std::cout, std::ostream& err = std::cerr);
int cmdStateGet(const std::string& home, const std::string& key, std::ostream& out = std::cout,
                std::ostream& err = std::cerr);
int cmdStateSet(const std::string& home, const std::string& key, const std::string& jsonText,
                std::ostream& out = std::cout, std::ostream& err = std::cerr);
int cmdSchedules(const std::string& home, bool json, std::ostream& out = std::cout, std::ostream& err = std::cerr);
// `pinectl logs`: the audit log, filtered; -n the last N matching lines (with -f: 10 unless said).
struct LogsOptions {
  bool follow = false, json = false;
  long lines = -1;  // -1: every line (without -f)
  std::string since, event, agent, grep;
};
int cmdLogs(const std::string& home, const LogsOptions& options, std::ostream& out = std::cout,
            std::ostream& err = std::cerr);
// The first time --since lets through, as the log's own UTC text ("" for no limit); nullopt with
// `why` for a value that is neither a time ago (90s, 10m, 2h, 3d) nor a UTC date and time.
std::optional<std::string> sinceCutoff(const std::string& since, long long nowMs, std::string& why);
struct LogFilter {
  std::string cutoff, event, agent, grep;
  bool matches(const std::string& line) const;  // an audit line (JSON) this filter keeps
};
// Security notes of the home's configuration: exit 0 clean, 1 notes, 2 invalid configuration.
int cmdCheck(const std::string& home, bool json = false);
// The agents with their modes (GET /v1/agents).
int cmdAgents(const std::string& home, bool json, std::ostream& out = std::cout, std::ostream& err = std::cerr);
// One event onto the bus as the owner (POST /v1/events): exit 0 committed, 1 refused, 2 not JSON.
int cmdPublish(const std::string& home, const std::string& topic, const std::string& payloadJson, bool json,
               std::ostream& out = std::cout, std::ostream& err = std::cerr);
// What the running daemon reports wrong (owner channels that do not work); how many lines it printed.
int printLiveNotes(const std::string& home, std::ostream& out);
// Asks pined to re-read the configuration: exit 0 reloaded, 2 invalid (the old one stays).
int cmdReload(const std::string& home);
// Asks pined to stop cleanly and waits until it has: exit 0 stopped, 1 not reachable or still running.
int cmdStop(const std::string& home, std::ostream& out = std::cout, std::ostream& err = std::cerr);
// secret set NAME (value from the terminal without echo, or stdin) | unset NAME | list.
// unset refuses a secret the configuration uses unless `force` (on a terminal it asks first).
int cmdSecret(const std::string& home, const std::string& action, const std::string& name, bool force = false);

// pair telegram CODE: shows the account the code names and asks (unless yes) before pairing;
// deny refuses it for good. Exit 0 done, 1 not confirmed, else the API's failure.
int cmdPair(const std::string& home, const std::string& channel, const std::string& code, bool deny, bool yes,
            std::istream& in = std::cin, std::ostream& out = std::cout, std::ostream& err = std::cerr);
int cmdPairings(const std::string& home, bool json, std::ostream& out = std::cout, std::ostream& err = std::cerr);
int cmdUnpair(const std::string& home, const std::string& source, const std::string& userId,
              std::ostream& out = std::cout, std::ostream& err = std::cerr);

// Every source: running or why not, who wants it, last look and event, counts, errors.
int cmdSources(const std::string& home, bool json, std::ostream& out = std::cout, std::ostream& err = std::cerr);
// cmd_mcp.cpp: the MCP servers; review shows what changed in a server's tools and accepts it.
int cmdMcp(const std::string& home, bool json, std::ostream& out = std::cout, std::ostream& err = std::cerr);
int cmdMcpReview(const std::string& home, const std::string& server, bool json, std::ostream& out = std::cout,
                 std::ostream& err = std::cerr);
int cmdSubscriptions(const std::string& home, const std::string& agent, bool json, std::ostream& out = std::cout,
                     std::ostream& err = std::cerr);
// target: AGENT (its main conversation) or AGENT/SESSION.
int cmdSubscribe(const std::string& home, const std::string& target, const std::string& source,
                 const std::string& topic, bool separate, bool json, std::ostream& out = std::cout,
                 std::ostream& err = std::cerr);
int cmdUnsubscribe(const std::string& home, const std::string& id, std::ostream& out = std::cout,
                   std::ostream& err = std::cerr);

// One approval as pinectl shows it: id, agent, tool, arguments, reason, and how to answer.
std::string formatApproval(const nlohmann::json& approval);
// One event on one line: seq, time, topic, trust, payload.
std::string formatEvent(const nlohmann::json& event);

// One audit line made readable: time, event, who, then the other fields as key=value.
std::string formatAuditLine(const std::string& line);
// "3s", "2m05s", "1h02m", "3d04h".
std::string formatDuration(double seconds);

}  // namespace pine
