// pinectl: the owner's command line. It talks to the broker over the home's
// unix socket with the token from data/http-token.
#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>

#include "common/home.h"
#include "common/version_flag.h"
#include "config/errors.h"
#include "pinectl/cmd_guard.h"
#include "pinectl/cmd_redact.h"
#include "pinectl/cmd_sandbox.h"
#include "pinectl/commands.h"

namespace pine {
// The first word that is not an option, when it names no command: `pinectl stauts`.
std::string unknownCommand(CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--home") {
      ++i;
      continue;
    }
    if (a.rfind("-", 0) == 0) continue;
    for (auto* sub : app.get_subcommands({}))
      if (sub->check_name(a)) return "";
    return a;
  }
  return "";
}
}  // namespace pine

int main(int argc, char** argv) {
  CLI::App app{"pinectl: control a running pine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("pinectl ") + PINE_VERSION);
  app.fallthrough();  // inherited by the subcommands: `pinectl status --home H` as well as `pinectl --home H status`
  std::string homeFlag;
  app.add_option("--home", homeFlag, "pine's home (default: $PINE_HOME, else ~/.pine, else the service's home if there is one)");

  bool json = false, follow = false, noWait = false;
  auto* status = app.add_subcommand("status", "the processes pine runs and the tasks running");
  status->add_flag("--json", json, "print JSON");
  auto* tasks = app.add_subcommand("tasks", "recent tasks and how they ended");
  tasks->add_flag("--json", json, "print JSON");
  std::string taskId;
  auto* task = app.add_subcommand("task", "one task: what was asked, each tool call (allowed, refused, its result), the answer");
  task->add_option("id", taskId, "the task's id (pinectl tasks)")->required();
  task->add_flag("--json", json, "print JSON (the task and its audit lines)");
  std::string agent, text;
  auto* send = app.add_subcommand("send", "give an agent a task and print its answer");
  std::string session;
  send->add_option("agent", agent, "the agent's id, or AGENT/SESSION")->required();
  send->add_option("text", text, "what to do")->required();
  send->add_option("--session", session, "the conversation (default: the agent's main one)");
  send->add_flag("--no-wait", noWait, "return once the task has started");
  send->add_flag("--json", json, "print the task as JSON");
  send->footer("Progress and the approvals the task waits on go to stderr, the answer to stdout. Exit 1 when the task failed.");
  pine::LogsOptions logsOpt;
  auto* logs = app.add_subcommand("logs", "the audit log (data/logs/audit.jsonl)");
  logs->add_flag("-f,--follow", logsOpt.follow, "print the last lines (10 unless -n says), then new ones as they come");
  logs->add_option("-n,--lines", logsOpt.lines, "only the last N matching lines")->check(CLI::NonNegativeNumber);
  logs->add_option("--since", logsOpt.since, "only lines since a time ago (90s, 10m, 2h, 3d) or a UTC time (2026-12-03T14:30)");
  logs->add_option("--event", logsOpt.event, "only this event, or this family of events (task: task.start, task.end, ...)");
  logs->add_option("--agent", logsOpt.agent, "only lines about this agent");
  logs->add_option("--grep", logsOpt.grep, "only lines that contain this text");
  logs->add_flag("--json", logsOpt.json, "print the JSON lines as they are");

  bool always = false;
  std::string id, mode, topic, key, value, target;
  auto* approvals = app.add_subcommand("approvals", "approvals waiting for you, with their full arguments");
  approvals->add_flag("--json", json, "print JSON");
  auto* approve = app.add_subcommand("approve", "allow what an approval asks");
  approve->add_option("id", id, "the approval's id (pinectl approvals)")->required();
  approve->add_flag("--always", always, "also allow it from now on in this conversation");
  auto* cancel = app.add_subcommand("cancel", "stop a running or queued task (its worker is killed)");
  cancel->add_option("task", id, "the task's id (pinectl tasks)")->required();
  bool force = false;
  auto* changes = app.add_subcommand("changes", "what an ended task changed in its agent's workspace, with diffs");
  changes->add_option("task", id, "the task's id (pinectl tasks)")->required();
  changes->add_flag("--json", json, "print JSON");
  auto* undo = app.add_subcommand("undo", "put the files an ended task changed back as they were before it");
  undo->add_option("task", id, "the task's id (pinectl tasks)")->required();
  undo->add_flag("--force", force, "also put back files that changed again after the task");
  undo->add_flag("--json", json, "print JSON");
  undo->footer("Only the files that task changed are touched. Exit 3 (nothing written) when some of them were "
               "changed again after it ended, by a later run or by you: they are listed; --force overwrites them.");
  auto* deny = app.add_subcommand("deny", "refuse what an approval asks");
  deny->add_option("id", id, "the approval's id (pinectl approvals)")->required();
  auto* modeCmd = app.add_subcommand("mode", "switch an agent's mode until the daemon restarts");
  modeCmd->add_option("agent", agent, "the agent's id")->required();
  modeCmd->add_option("mode", mode, "manual, auto or bypass")->required();
  auto* reset = app.add_subcommand("reset", "start a conversation afresh (clears its outside-content mark)");
  reset->add_option("target", target, "AGENT (its main conversation) or AGENT/SESSION")->required();
  auto* chat = app.add_subcommand("chat", "talk with an agent in the terminal: answers stream, approvals are asked inline");
  chat->add_option("target", target, "AGENT (its main conversation) or AGENT/SESSION")->required();
  chat->footer("Slash commands: /reset /mode MODE /session NAME /folder DIR /usage /help /quit (or Ctrl-D). "
               "Ctrl-C stops waiting for an answer and cancels its task. History: ~/.pine_history.");
  std::string folderDir;
  bool closeFolder = false;
  auto* folderCmd = app.add_subcommand("folder", "open a folder of yours for one conversation: its runs start there "
                                                 "and may read and write it (no DIR: show it)");
  folderCmd->add_option("target", target, "AGENT (its main conversation) or AGENT/SESSION")->required();
  folderCmd->add_option("dir", folderDir, "the folder; never pine's home, its programs, another agent's or a system folder");
  folderCmd->add_flag("--close", closeFolder, "close the conversation's folder");
  auto* events = app.add_subcommand("events", "recent events on the bus");
  events->add_flag("-f,--follow", follow, "keep printing new events");
  events->add_option("--topic", topic, "only these topics; MQTT wildcards + and # work");
  events->add_flag("--json", json, "one JSON object a line");
  auto* state = app.add_subcommand("state", "the shared state store");
  state->require_subcommand(1);
  auto* stateGet = state->add_subcommand("get", "print a key's value");
  stateGet->add_option("key", key)->required();
  auto* stateSet = state->add_subcommand("set", "set a key to a JSON value");
  stateSet->add_option("key", key)->required();
  stateSet->add_option("json", value, "the value, as JSON ('\"text\"', 42, '{\"a\": 1}')")->required();
  auto* sources = app.add_subcommand("sources", "every source: running or why not, who wants it, last event, errors");
  sources->add_flag("--json", json, "print JSON");
  auto* subscriptions = app.add_subcommand("subscriptions", "which conversations hear which sources");
  subscriptions->add_option("--agent", agent, "only this agent's");
  subscriptions->add_flag("--json", json, "print JSON");
  std::string source;

  bool separate = false;
  auto* subscribe = app.add_subcommand("subscribe", "have a source's events delivered into a conversation");
  subscribe->add_option("target", target, "AGENT (its main conversation) or AGENT/SESSION")->required();
  subscribe->add_option("source", source, "the source's name (pinectl sources)")->required();
  subscribe->add_option("--topic", topic, "only events whose topic matches this filter (+ one level, # the rest)");
  subscribe->add_flag("--separate", separate, "start a run of its own per event (untrusted) instead");
  subscribe->add_flag("--json", json, "print JSON");
  subscribe->footer("Events of a source not marked trust: owner arrive as data and mark the conversation as having "
                    "read outside content.");
  auto* unsubscribe = app.add_subcommand("unsubscribe", "stop a subscription (pinectl subscriptions lists them)");
  unsubscribe->add_option("id", id, "the subscription's id")->required();
  std::string mcpServer;
  auto* mcp = app.add_subcommand("mcp", "the agents' MCP servers: state and tools");
  mcp->add_flag("--json", json, "print JSON");
  auto* mcpReview = mcp->add_subcommand("review", "show how a server's tools changed since you saw them, and accept that");
  mcpReview->add_option("server", mcpServer, "the server's name (pinectl mcp)")->required();
  mcpReview->add_flag("--json", json, "print JSON");
  auto* schedules = app.add_subcommand("schedules", "every schedule with its task and next run");
  schedules->add_flag("--json", json, "print JSON");

  bool denyCode = false, yes = false;
  std::string channel, code, userId;
  auto* pair = app.add_subcommand("pair", "pair the account that got a code from pine's bot (it is named first)");
  pair->add_option("channel", channel, "telegram")->required();
  pair->add_option("code", code, "the code the bot sent")->required();
  pair->add_flag("--deny", denyCode, "refuse that account: it is never asked about again");
  pair->add_flag("-y,--yes", yes, "pair without asking");
  auto* pairings = app.add_subcommand("pairings", "paired, denied and waiting Telegram accounts");
  pairings->add_flag("--json", json, "print JSON");
  auto* unpair = pairings->add_subcommand("remove", "remove a pairing (a denied account may then ask again)");
  unpair->add_option("source", source, "the telegram source's name")->required();
  unpair->add_option("user", userId, "the account's user id (pinectl pairings)")->required();

  auto* redact = app.add_subcommand("redact", "copy stdin to stdout with every secret pine knows of, and every"
                                                " secret-shaped value, replaced by [redacted]");

  auto* guard = app.add_subcommand("guard", "see what pine's guards decide");
  guard->require_subcommand(1);
  auto* guardBash = guard->add_subcommand("bash", "classify shell commands read from stdin, one per line: "
                                                  "prints `allow` or `block: <reason>` for each, in order");
  guardBash->add_flag("--json", json, "each input line is a JSON string (for commands with newlines)");

  auto* sandbox = app.add_subcommand("sandbox", "the sandbox agents run in");
  sandbox->require_subcommand(1);
  auto* sandboxRun = sandbox->add_subcommand("run", "run a command under exactly the policy the agent's shell gets");
  bool tainted = false;
  std::vector<std::string> command;
  sandboxRun->add_option("--agent", agent, "the agent whose sandbox to use")->required();
  sandboxRun->add_flag("--tainted", tainted, "as in a session that has read outside content");
  sandboxRun->add_option("command", command, "-- CMD ARGS...")->required();
  sandboxRun->prefix_command();  // everything after the command belongs to it

  auto* check = app.add_subcommand("check", "security notes of the configuration (exit 0 clean, 1 notes, 2 invalid)");
  check->add_flag("--json", json, "print {valid, errors, notes, running} as JSON");
  auto* agents = app.add_subcommand("agents", "the agents: mode, model, conversations, running tasks");
  agents->add_flag("--json", json, "print JSON");
  std::string payload;
  auto* publish = app.add_subcommand("publish", "put an event on the bus as the owner (trust: owner)");
  publish->add_option("topic", topic, "its topic, like home/door")->required();
  publish->add_option("json", payload, "its payload as JSON ('{\"open\": true}', 42, '\"text\"')")->required();
  publish->add_flag("--json", json, "print the committed event as JSON");
  publish->footer("Exit 0 once committed, 1 refused (pine's own topics agent/, approval/, pine/, state/, timer/), 2 not JSON.");
  std::string usageSince;
  int usageTasks = 10;
  auto* usageCmd = app.add_subcommand("usage", "tokens (cache reads and writes too) and estimated cost per agent, day and task; budgets reached");
  usageCmd->add_option("--agent", agent, "only this agent");
  usageCmd->add_option("--since", usageSince, "from a day (2026-12-01, today, 7d) or an ISO time (2026-12-03T14:30Z)");
  usageCmd->add_option("-n,--tasks", usageTasks, "how many of the most recent tasks to list (default 10)")->check(CLI::Range(1, 1000));
  usageCmd->add_flag("--json", json, "print GET /v1/usage's JSON");
  auto* stop = app.add_subcommand("stop", "stop pined cleanly, as SIGTERM does, and wait until it has");
  auto* reload = app.add_subcommand("reload", "make pined re-read the configuration (a bad one never replaces"
                                              " the one in force)");

  auto* secret = app.add_subcommand("secret", "secrets in .env, kept by pined alone");
  secret->require_subcommand(1);
  std::string secretName;
  auto* secretSet = secret->add_subcommand("set", "store a secret: the value is read from the terminal without"
                                                  " echo, or from stdin");
  secretSet->add_option("name", secretName, "the name configuration refers to, like OPENAI_KEY")->required();
  auto* secretUnset = secret->add_subcommand("unset", "remove a secret");
  secretUnset->add_option("name", secretName)->required();
  bool forceUnset = false;
  secretUnset->add_flag("--force", forceUnset, "remove it even while the configuration uses it (pined will not start until it no longer does)");
  auto* secretList = secret->add_subcommand("list", "the names of the stored secrets (never their values)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (std::string word = pine::unknownCommand(app, argc, argv); !word.empty()) {
      std::vector<std::string> names;
      for (auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
      std::string near = pine::config::nearest(word, names);
      std::cerr << "pinectl: no command '" << word << "'" << (near.empty() ? "" : "; did you mean '" + near + "'?")
                << " (pinectl --help lists them)\n";
      return 2;
    }
    return app.exit(e);
  }
  signal(SIGPIPE, SIG_IGN);  // a closed socket is an error to report, not a reason to die
  try {
    std::string home = pine::resolveHome(homeFlag, true);
    if (*status) return pine::cmdStatus(home, json);
    if (*tasks) return pine::cmdTasks(home, json);
    if (*task) return pine::cmdTask(home, taskId, json);
    if (*send) return pine::cmdSend(home, session.empty() ? agent : agent + "/" + session, text, !noWait, json);
    if (*logs) return pine::cmdLogs(home, logsOpt);
    if (*approvals) return pine::cmdApprovals(home, json);
    if (*approve) return pine::cmdApprove(home, id, always);
    if (*deny) return pine::cmdDeny(home, id);
    if (*cancel) return pine::cmdCancel(home, id);
    if (*changes) return pine::cmdChanges(home, id, json);
    if (*undo) return pine::cmdUndo(home, id, force, json);
    if (*modeCmd) return pine::cmdMode(home, agent, mode);
    if (*reset) return pine::cmdReset(home, target);
    if (*chat) return pine::cmdChat(home, target);
    if (*folderCmd) return pine::cmdFolder(home, target, folderDir, closeFolder);
    if (*events) return pine::cmdEvents(home, follow, topic, json);
    if (*stateGet) return pine::cmdStateGet(home, key);
    if (*stateSet) return pine::cmdStateSet(home, key, value);
    if (*schedules) return pine::cmdSchedules(home, json);
    if (*sources) return pine::cmdSources(home, json);
    if (*mcpReview) return pine::cmdMcpReview(home, mcpServer, json);
    if (*mcp) return pine::cmdMcp(home, json);
    if (*subscriptions) return pine::cmdSubscriptions(home, agent, json);
    if (*subscribe) return pine::cmdSubscribe(home, target, source, topic, separate, json);
    if (*unsubscribe) return pine::cmdUnsubscribe(home, id);
    if (*secretSet) return pine::cmdSecret(home, "set", secretName);
    if (*secretUnset) return pine::cmdSecret(home, "unset", secretName, forceUnset);
    if (*secretList) return pine::cmdSecret(home, "list", "");
    if (*pair) return pine::cmdPair(home, channel, code, denyCode, yes);
    if (*unpair) return pine::cmdUnpair(home, source, userId);
    if (*pairings) return pine::cmdPairings(home, json);
    if (*check) return pine::cmdCheck(home, json);
    if (*agents) return pine::cmdAgents(home, json);
    if (*publish) return pine::cmdPublish(home, topic, payload, json);
    if (*usageCmd) return pine::cmdUsage(home, agent, usageSince, usageTasks, json);
    if (*stop) return pine::cmdStop(home);
    if (*reload) return pine::cmdReload(home);
    if (*guardBash) return pine::cmdGuardBash(std::cin, std::cout, json);
    if (*sandboxRun) return pine::cmdSandboxRun(home, agent, tainted, command);
    if (*redact) {
      std::ios::sync_with_stdio(false);  // bulk reads; output still flushes as input runs dry
      return pine::cmdRedact(home, std::cin, std::cout);
    }
  } catch (std::exception& e) {
    std::cerr << "pinectl: " << e.what() << "\n";
    return 1;
  }
  return 2;
}
