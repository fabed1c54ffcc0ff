// pinectl: the owner's command line. It talks to the broker over the home's
// unix socket with the token from data/http-token.
#include <CLI/CLI.hpp>
#include <iostream>

#include "common/home.h"
#include "pinectl/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"pinectl: control a running pine"};
  app.require_subcommand(1);
  std::string homeFlag;
  app.add_option("--home", homeFlag, "pine's home (default: $PINE_HOME, else ~/.pine)");

  bool json = false, follow = false, noWait = false;
  auto* status = app.add_subcommand("status", "the processes pine runs and the tasks running");
  status->add_flag("--json", json, "print JSON");
  auto* tasks = app.add_subcommand("tasks", "recent tasks and how they ended");
  tasks->add_flag("--json", json, "print JSON");
  std::string agent, text;
  auto* send = app.add_subcommand("send", "give an agent a task and print its answer");
  send->add_option("agent", agent, "the agent's id")->required();
  send->add_option("text", text, "what to do")->required();
  send->add_flag("--no-wait", noWait, "return once the task has started");
  send->add_flag("--json", json, "print the task as JSON");
  auto* logs = app.add_subcommand("logs", "the audit log (data/logs/audit.jsonl)");
  logs->add_flag("-f,--follow", follow, "keep printing new lines");
  logs->add_flag("--json", json, "print the JSON lines as they are");

  CLI11_PARSE(app, argc, argv);
  try {
    std::string home = pine::resolveHome(homeFlag);
    if (*status) return pine::cmdStatus(home, json);
    if (*tasks) return pine::cmdTasks(home, json);
    if (*send) return pine::cmdSend(home, agent, text, !noWait, json);
    if (*logs) return pine::cmdLogs(home, follow, json);
  } catch (std::exception& e) {
    std::cerr << "pinectl: " << e.what() << "\n";
    return 1;
  }
  return 2;
}
