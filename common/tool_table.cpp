#include "common/tool_table.h"

namespace pine::tooltable {
namespace {

using Json = nlohmann::json;

Json prop(const char* type, const char* description) { return Json{{"type", type}, {"description", description}}; }
Json typed(const char* type) { return Json{{"type", type}}; }

// The worker's tools take exactly their arguments; the broker's ignore what they do not use.
Json strictObject(Json properties, std::vector<std::string> required) {
  return Json{{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)},
              {"additionalProperties", false}};
}
Json object(Json properties, std::vector<std::string> required) {
  return Json{{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

Json withMinimum(Json p, long long min) {
  p["minimum"] = min;
  return p;
}

std::vector<Tool> makeTable() {
  using enum Side;
  std::vector<Tool> t;
  auto row = [&](Tool tool) { t.push_back(std::move(tool)); };

  // The worker's own tools: file I/O through the path jail, the shell, a download's writing.
  row({.name = "read", .side = Worker, .reads = Reads::Always, .untrusted = Untrusted::Always, .byDefault = true,
       .description = "Read a text file. Lines come numbered; long files are shown in parts (use offset and limit "
                      "to go on). Binary files are not shown. Control characters are removed from what is shown.",
       .parameters = strictObject(
           {{"path", prop("string", "File to read, relative to the workspace or absolute.")},
            {"offset", withMinimum(prop("integer", "First line to show, counting from 1 (default 1)."), 1)},
            {"limit", withMinimum(prop("integer", "How many lines to show (default 2000)."), 1)}},
           {"path"})});
  row({.name = "write", .side = Worker, .untrusted = Untrusted::Write, .byDefault = true,
       .description = "Create or replace a file with the given content. Missing parent folders are created. The "
                      "file is replaced as a whole (written beside it, then renamed over it).",
       .parameters = strictObject({{"path", prop("string", "File to write, relative to the workspace or absolute.")},
                                   {"content", prop("string", "The complete new content of the file.")}},
                                  {"path", "content"})});
  row({.name = "edit", .side = Worker, .untrusted = Untrusted::Write, .byDefault = true,
       .description = "Replace one exact piece of text in a file. old_text must occur exactly once (include "
                      "surrounding lines to make it unique); whitespace and line breaks must match.",
       .parameters = strictObject(
           {{"path", prop("string", "File to edit.")},
            {"old_text", prop("string", "The exact text to replace; must occur exactly once.")},
            {"new_text", prop("string", "The text to put in its place.")}},
           {"path", "old_text", "new_text"})});
  row({.name = "grep", .side = Worker, .reads = Reads::Always, .untrusted = Untrusted::Always, .byDefault = true,
       .description = "Search file contents with a regular expression (RE2 syntax: no backreferences or "
                      "lookaround). Skips .git folders and binary files. Prints path:line:text.",
       .parameters = strictObject(
           {{"pattern", prop("string", "RE2 regular expression.")},
            {"path", prop("string", "File or folder to search (default: the workspace).")},
            {"glob", prop("string", "Only files whose name matches this glob, e.g. *.cpp (a glob with / is "
                                    "matched against the path below the search folder).")},
            {"ignore_case", prop("boolean", "Match without regard to case.")}},
           {"pattern"})});
  row({.name = "find", .side = Worker, .reads = Reads::Always, .untrusted = Untrusted::Always, .byDefault = true,
       .description = "Find files and folders by name with a glob (e.g. *.md, src/**/*.h). Skips .git folders.",
       .parameters = strictObject({{"pattern", prop("string", "Glob matched against the name, or against the path "
                                                              "below the search folder when it contains /.")},
                                   {"path", prop("string", "Folder to search (default: the workspace).")}},
                                  {"pattern"})});
  row({.name = "ls", .side = Worker, .reads = Reads::Always, .untrusted = Untrusted::Always, .byDefault = true,
       .description = "List a folder: each entry with its type and size.",
       .parameters = strictObject({{"path", prop("string", "Folder to list (default: the workspace).")}}, {})});
  row({.name = "bash", .side = Worker, .untrusted = Untrusted::Shell, .byDefault = true,
       .description = "Run a shell command with /bin/bash in the workspace, without network or secrets. stdout and "
                      "stderr come back together with the exit code; long output is cut in the middle. Some "
                      "commands are refused (destructive ones aimed at home or /, inline interpreter code, "
                      "publishing, git escape hatches).",
       .parameters = strictObject(
           {{"command", prop("string", "The command line.")},
            {"timeout_sec",
             withMinimum(prop("integer", "Seconds before the command is stopped (capped by the agent's limit)."), 1)}},
           {"command"})});
  // pined fetches, the broker relays, the worker writes: decided when its capability fetches.
  row({.name = "download", .side = Worker, .outside = true, .byDefault = true, .decide = Decide::Fetch,
       .description = "Fetch a web address into a file, byte for byte; reports the size and SHA-256. pine does the "
                      "fetching and decides by the address: a server of your MCP servers, any public https address "
                      "when you have web tools, else only with network access for this conversation (ask with "
                      "request_access). Redirects are not followed; the size is capped.",
       .parameters = strictObject(
           {{"url", prop("string", "The address, https://...")},
            {"path", prop("string", "Where to save it (relative to the workspace); replaced if it exists.")}},
           {"url", "path"})});

  // The broker's tools.
  row({.name = "request_access", .byDefault = true, .decide = Decide::RequestAccess,
       .description = "Ask the owner for access outside the workspace: a path (read or write) or network for the "
                      "shell.",
       .parameters = object({{"path", typed("string")}, {"access", typed("string")}, {"network", typed("string")},
                             {"reason", typed("string")}},
                            {"reason"})});
  row({.name = "state_get", .reads = Reads::Always, .untrusted = Untrusted::StateWrite, .byDefault = true,
       .description = "Read a value of pine's shared state.",
       .parameters = object({{"key", typed("string")}}, {"key"})});
  row({.name = "state_set", .untrusted = Untrusted::StateWrite, .byDefault = true,
       .description = "Write a value of pine's shared state (any JSON).",
       .parameters = object({{"key", typed("string")}, {"value", typed("object")}}, {"key", "value"})});
  row({.name = "publish_event", .untrusted = Untrusted::PublishEvent,
       .description = "Publish an event on a topic your agent may use (its `publish` list).",
       .parameters = object({{"topic", typed("string")}, {"payload", typed("object")}}, {"topic"})});
  row({.name = "send",
       .description = "Send a message to the owner (to: \"owner\"), or through a source such as MQTT (to: its "
                      "name, topic: on its publish list).",
       .parameters = object({{"to", typed("string")}, {"text", typed("string")}, {"topic", typed("string")}},
                            {"to", "text"})});
  row({.name = "delegate", .untrusted = Untrusted::Delegate,
       .description = "Hand a task to another agent and wait for its answer.",
       .parameters = object({{"agent", typed("string")}, {"task", typed("string")}}, {"agent", "task"})});
  row({.name = "subagent", .untrusted = Untrusted::SubAgents, .configurable = false,
       .description = "Hand part of this conversation's job to a copy of yourself (same permissions) and wait for "
                      "its answer.",
       .parameters = object({{"task", typed("string")}}, {"task"})});
  row({.name = "subscribe", .decide = Decide::Subscribe,
       .description = "Have events of a source delivered into this conversation (or, separate: true, to runs of "
                      "their own).",
       .parameters = object({{"source", typed("string")}, {"topic", typed("string")}, {"separate", typed("boolean")}},
                            {"source"})});
  // Configuration the owner confirms, written by pined.
  row({.name = "schedules", .side = Pined, .reads = Reads::WhenListing, .decide = Decide::OwnerConfirms,
       .description = "List the schedules that wake this agent, or create one (the owner may be asked).",
       .parameters = Json{
           {"type", "object"},
           {"properties",
            {{"action", {{"type", "string"}, {"enum", {"list", "create"}}}},
             {"name", typed("string")},
             {"cron", {{"type", "string"}, {"description", "five fields: minute hour day month weekday"}}},
             {"intervalSec", {{"type", "integer"}, {"minimum", 60}}},
             {"at", {{"type", "string"}, {"description", "once, YYYY-MM-DDTHH:MM"}}},
             {"timezone", typed("string")},
             {"task", typed("string")},
             {"for", {{"type", "string"}, {"enum", {"conversation", "agent", "all"}}}}}},
           {"required", {"action"}}}});
  row({.name = "add_skill", .side = Pined, .decide = Decide::OwnerConfirms,
       .description = "Add a skill: standing instructions for a kind of task, listed in the skills index of later "
                      "tasks (for you, or forAllAgents when you are the main agent). The owner may be asked and "
                      "sees the text.",
       .parameters = object({{"name", typed("string")}, {"description", typed("string")},
                             {"instructions", typed("string")}, {"forAllAgents", typed("boolean")}},
                            {"name", "description", "instructions"})});
  row({.name = "add_source", .side = Pined, .decide = Decide::OwnerConfirms,
       .description = "Set up an event source (its pine.yaml entry: name, type and the type's fields, e.g. mqtt "
                      "with url and topics, a folder by its absolute path (outside pine's home), or a command: its words "
                      "as a list, run in your sandbox every intervalSec or, with mode: lines, kept running; a webhook "
                      "with its topic: pine makes its secret and tells you the .env entry's name). Only in a "
                      "conversation with the owner, who confirms anything that opens something new (a folder outside "
                      "your workspace, by its path). Subscribe to it afterwards.",
       .parameters = object({{"source", typed("object")}, {"forAllAgents", typed("boolean")}}, {"source"})});
  row({.name = "create_agent", .side = Pined, .mainOnly = true, .decide = Decide::CreateAgent,
       .description = "Create a new agent (the owner is always asked and sees its instructions). It gets at most "
                      "your tools; default read, write, edit, grep, find, ls, bash.",
       .parameters = Json{{"type", "object"},
                          {"properties",
                           {{"id", typed("string")},
                            {"description", typed("string")},
                            {"instructions", {{"type", "string"}, {"description", "its AGENTS.md"}}},
                            {"mode", {{"type", "string"}, {"enum", {"auto", "manual"}}}},
                            {"tools", {{"type", "array"}, {"items", typed("string")}}}}},
                          {"required", {"id", "description", "instructions"}}}});
  row({.name = "add_source_type", .side = Pined, .mainOnly = true, .decide = Decide::AddSourceType,
       .description = "Register a new kind of event source: a program in your workspace that prints events as JSON "
                      "lines (docs/sources.md, source programs). It runs with pine's rights, so the owner is asked "
                      "every time and sees its size, SHA-256 and first lines; only in a conversation that has read "
                      "no outside content. What the owner confirmed is copied into pine's home and runs from there; "
                      "a source then names it with type: NAME.",
       .parameters = object({{"name", typed("string")}, {"path", typed("string")}}, {"name", "path"})});
  row({.name = "add_mcp_server", .side = Pined, .decide = Decide::AddMcpServer,
       .description = "Add a remote MCP server (by its https address) to your configuration: its tools become "
                      "mcp__NAME__<tool> from your next task on, and what it answers is outside content. The owner "
                      "is asked every time; a server that needs a login is the owner's to add.",
       .parameters = Json{{"type", "object"},
                          {"properties",
                           {{"name", typed("string")},
                            {"url", typed("string")},
                            {"approve", {{"type", "string"}, {"enum", {"tainted", "always"}}}}}},
                          {"required", {"name", "url"}}}});
  return t;
}

}  // namespace

const std::vector<Tool>& builtinTools() {
  static const std::vector<Tool> table = makeTable();
  return table;
}

const Tool* findTool(std::string_view name) {
  for (const auto& t : builtinTools())
    if (t.name == name) return &t;
  return nullptr;
}

bool readsOnly(const Tool& tool, const nlohmann::json& args) {
  switch (tool.reads) {
    case Reads::Always: return true;
    case Reads::Never: return false;
    case Reads::WhenListing:
      if (!args.is_object()) return false;
      if (!args.contains("action")) return true;
      return args["action"].is_string() && args["action"].get<std::string>() == "list";
  }
  return false;
}

nlohmann::json specOf(const Tool& tool) {
  return Json{{"name", tool.name}, {"description", tool.description}, {"parameters", tool.parameters}};
}

std::optional<std::string> checkArguments(const std::string& tool, const nlohmann::json& params,
                                          const nlohmann::json& args) {
  const std::string where = tool + ": ";
  if (!args.is_object()) return where + "the arguments must be a JSON object, got " + std::string(args.type_name());
  if (!params.is_object()) return where + "this tool has no argument schema";
  if (auto req = params.find("required"); req != params.end() && req->is_array())
    for (const auto& key : *req)
      if (key.is_string() && !args.contains(key.get<std::string>()))
        return where + "missing required argument '" + key.get<std::string>() + "'";
  static const Json kNone = Json::object();
  auto propsIt = params.find("properties");
  const Json& props = propsIt != params.end() && propsIt->is_object() ? *propsIt : kNone;
  const bool strict = params.value("additionalProperties", true) == false;
  for (const auto& [key, value] : args.items()) {
    auto p = props.find(key);
    if (p == props.end() || !p->is_object()) {
      if (!strict) continue;
      std::string known;
      for (const auto& [k, v] : props.items()) known += (known.empty() ? "" : ", ") + k;
      return where + "unknown argument '" + key + "'; it takes: " + known;
    }
    const std::string type = p->value("type", "");
    bool good = type.empty() || (type == "string" && value.is_string()) || (type == "boolean" && value.is_boolean()) ||
                (type == "integer" && value.is_number_integer()) || (type == "object" && value.is_object()) ||
                (type == "array" && value.is_array()) || (type == "number" && value.is_number());
    if (!good)
      return where + "argument '" + key + "' must be " + (type == "integer" || type == "object" || type == "array" ? "an " : "a ") +
             type + ", got " + std::string(value.type_name());
    if (type == "integer" && p->contains("minimum") && (*p)["minimum"].is_number_integer() &&
        value.is_number_integer() && !value.is_number_unsigned() &&
        value.get<long long>() < (*p)["minimum"].get<long long>())
      return where + "argument '" + key + "' must be at least " + (*p)["minimum"].dump();
  }
  return std::nullopt;
}

}  // namespace pine::tooltable
