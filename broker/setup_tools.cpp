// The tools that set things up: schedules (create), add_skill, create_agent. Each
// writes configuration, which only pined writes: the new text goes through
// changeConfig and is validated there exactly like the file it becomes. The
// decision to ask or refuse was made before (RunGate::checkBrokerTool, policy/setup_rules).
#include <kj/debug.h>

#include <algorithm>
#include <string_view>

#include "broker/broker_tools.h"
#include "broker/policy/quote.h"
#include "broker/skills.h"
#include "broker/sources/source_kinds.h"
#include "broker/yaml_blocks.h"
#include "common/fd.h"
#include "common/log.h"
#include "common/names.h"
#include "common/web_address.h"
#include "config/command_line.h"

namespace pine {
namespace {


std::string readOrEmpty(const std::string& path) {
  try {
    return readFile(path);
  } catch (std::exception&) {
    return "";
  }
}

// `text` (a YAML file) with `item` (flow style) added to the block list under the top-level `key`.
std::optional<std::string> appendToList(const std::string& text, const std::string& key, const std::string& item,
                                        std::string& error) {
  return appendToBlock(text, key, "- " + item, error);
}

std::string joinErrors(capnp::List<capnp::Text>::Reader errors) {
  std::string out;
  for (auto e : errors) out += std::string(e.cStr()) + "\n";
  return out;
}

// Why an ftp source's address is on the local network ("": public): its host read as http's is.
std::string ftpLocalReason(const std::string& url) {
  const size_t sep = url.find("://");
  return sep == std::string::npos ? "" : localNetworkReason("https://" + url.substr(sep + 3));
}

// A command source's words: a list of 1 to 64 strings, each non-empty, at most 4096 bytes, no NUL.

std::optional<std::string> commandWordsProblem(const nlohmann::json& src) {
  const char* shape = "\"command\" is the program and its arguments as a list of strings, e.g. [\"df\", \"-h\"]";
  if (!src.contains("command") || !src["command"].is_array() || src["command"].empty() || src["command"].size() > 64)
    return std::string(shape);
  for (const auto& w : src["command"])
    if (!w.is_string() || w.get<std::string>().empty() || w.get<std::string>().size() > 4096 ||
        w.get<std::string>().find('\0') != std::string::npos)
      return std::string(shape);
  return std::nullopt;
}

}  // namespace

kj::Promise<std::optional<std::string>> BrokerTools::changeConfig(const std::string& path, const std::string& content,
                                                          const std::string& reason) {
  auto req = run_.services.supervisor().changeConfigRequest();
  req.setPath(path);
  req.setContent(content);
  req.setReason(reason + " (asked for by " + run_.req.agent + ", task " + run_.taskId + ")");
  return req.send().then([](auto&& r) -> std::optional<std::string> {
    if (r.getOk()) return std::nullopt;
    return joinErrors(r.getErrors());
  });
}

kj::Promise<std::optional<std::string>> BrokerTools::addToPineYaml(const std::string& list, const nlohmann::json& entry,
                                                           const std::string& reason) {
  std::string why;
  auto updated = appendToList(readOrEmpty(run_.services.home().root + "/pine.yaml"), list, entry.dump(), why);
  if (!updated) return std::optional<std::string>(why);
  return changeConfig("pine.yaml", *updated, reason);
}

kj::Promise<ToolAnswer> BrokerTools::scheduleCreate(const nlohmann::json& args) {
  std::string name = args.value("name", ""), task = args.value("task", ""), target = args.value("for", "conversation");
  if (name.empty() || task.empty()) return toolError("\"name\" and \"task\" are required");
  int kinds = int(args.contains("cron")) + int(args.contains("intervalSec")) + int(args.contains("at"));
  if (kinds != 1) return toolError("give exactly one of cron, intervalSec and at");
  nlohmann::json entry = {{"name", name},
                          {"agent", target == "all" ? "*" : run_.req.agent},
                          {"task", task},
                          {"createdBy", "agent:" + run_.req.agent + "/" + run_.req.session}};
  if (target == "conversation") entry["session"] = run_.req.session;
  for (const char* k : {"cron", "intervalSec", "at", "timezone"})
    if (args.contains(k)) entry[k] = args[k];
  return addToPineYaml("schedules", entry, "schedule '" + name + "'").then([this, name](std::optional<std::string> e) {
    if (e) return toolError("the schedule was not created:\n" + *e);
    run_.services.reloadConfiguration();
    return ToolAnswer{"schedule '" + name + "' created", false};
  });
}

std::optional<std::string> checkSetupArgs(const RunContext& run, const std::string& tool, const nlohmann::json& args) {
  if (tool == "add_skill") {
    NewSkill skill{args.value("name", ""), args.value("description", ""), args.value("instructions", "")};
    if (auto why = checkNewSkill(skill)) return why;
    if (args.contains("forAllAgents") && !args["forAllAgents"].is_boolean()) return "\"forAllAgents\" is true or false";
    for (const auto& s : run.config->pine.skills)
      if (s.name == skill.name)
        return "a skill '" + skill.name + "' exists; an agent adds skills, the owner changes them: pick another name";
    return std::nullopt;
  }
  if (tool == "create_agent") {
    std::string id = args.value("id", ""), mode = args.value("mode", "auto");
    if (!isValidAgentId(id)) return "\"id\" is 1 to 64 characters of [a-z0-9_-], not starting with '-'";
    if (run.config->agents.count(id)) return "an agent '" + id + "' exists";
    // The same limits as a skill's: one line of description, Markdown instructions.
    if (auto why = checkNewSkill({id, args.value("description", ""), args.value("instructions", "")})) return why;
    if (mode != "auto" && mode != "manual") return "\"mode\" is auto or manual (bypass is the owner's to set)";
    if (!args.contains("tools")) return std::nullopt;
    if (!args["tools"].is_array()) return "\"tools\" is a list of tool names";
    // A new agent gets at most the tools of the agent that creates it, and never create_agent.
    const auto& own = run.agent().tools;
    for (auto& t : args["tools"]) {
      if (!t.is_string()) return "\"tools\" is a list of tool names";
      std::string name = t.get<std::string>();
      if (name == "create_agent") return "only the main agent creates agents; a new agent cannot have create_agent";
      if (std::find(own.begin(), own.end(), name) == own.end())
        return "a new agent gets at most your own tools; you have no '" + name + "'";
    }
    return std::nullopt;
  }
  if (tool == "add_source_type") return checkSourceTypeArgs(run, args);  // source_type_tool.cpp
  if (tool == "add_mcp_server") return checkMcpServerArgs(run, args);    // mcp_server_tool.cpp
  if (tool == "add_source") {
    if (!args.contains("source") || !args["source"].is_object())
      return "\"source\" is the source's entry as pine.yaml writes it (name, type and the type's fields)";
    const auto& src = args["source"];
    std::string name = src.value("name", ""), type = src.value("type", "");
    if (!isValidAgentId(name)) return "a source's name is 1 to 64 characters of [a-z0-9_-], not starting with '-'";
    for (const auto& s : run.config->pine.sources)
      if (s.name == name) return "a source '" + name + "' exists; pick another name";
    if (src.contains("agent")) return "\"agent\" is set by pine (forAllAgents: true for a source of every agent)";
    // What runs a program outside the sandbox, or needs a secret, is the owner's to set up.
    if (src.contains("use"))
      return "a source program runs outside the sandbox with pine's rights: the owner sets it up in pine.yaml";
    // Only the types that run; a registered program type is the owner's program, asked about below.
    if (!src.contains("type") || !src["type"].is_string()) return "\"type\" is the source's type, a string";
    if (auto why = sources::whyNotForAgents(type, run.config->pine.sourceTypes)) return why;
    if (type == "command") {
      // Runs in the agent's own sandbox; the owner sees the words before it exists (decideAddSource).
      if (auto why = commandWordsProblem(src)) return why;
    } else if (src.contains("command")) {
      return "\"command\" belongs to a source of type command";
    }
    // An ftp source names the .env entries of its login (the question shows them); their values stay the owner's.
    const bool ftp = type == "ftp";
    if (ftp && (!src.contains("usernameSecret") || !src["usernameSecret"].is_string() ||
                !src.contains("passwordSecret") || !src["passwordSecret"].is_string()))
      return "an ftp source names its login's .env entries in usernameSecret and passwordSecret (the owner stores "
             "them with `pinectl secret set NAME`)";
    if (ftp && src.contains("tls"))
      return "\"tls\" is the owner's to write in pine.yaml: without TLS the password crosses the network in clear";
    // A webhook's secret is made by pine (makeHookSecret): the model is told only its .env entry's name.
    if (type == "webhook" && src.contains("secret"))
      return "pine makes a webhook's secret and stores it in .env: leave out \"secret\" (you are told the entry's name)";
    if (type == "webhook" && src.contains("open") && !src["open"].is_boolean()) return "\"open\" is true or false";
    // Checked before the owner is asked: pine makes the secret before it writes the entry, and a
    // refused entry would leave that secret's name taken.
    if (type == "webhook" && (!src.contains("topic") || !src["topic"].is_string()))
      return "a webhook needs a \"topic\" (the topic of the events it makes, e.g. \"ci/github\")";
    for (const char* key : {"secret", "usernameSecret", "passwordSecret", "tokenSecret"})
      if (src.contains(key) && !(ftp && (std::string_view(key) == "usernameSecret" || std::string_view(key) == "passwordSecret")))
        return std::string("add_source cannot set up secrets (\"") + key +
               "\"): the owner stores it with `pinectl secret set NAME` and adds the source";
    if (args.contains("forAllAgents") && !args["forAllAgents"].is_boolean()) return "\"forAllAgents\" is true or false";
    // Public or local is what the owner confirms in the question, written from the address itself.
    if ((type == "http" || type == "ftp") && src.contains("network"))
      return "\"network\" is written by pine: the owner's question says whether the address is on the local network";
    return std::nullopt;
  }
  return std::nullopt;
}

policy::AddSourceRequest addSourceRequest(const RunContext& run, const nlohmann::json& args) {
  policy::AddSourceRequest r;
  const auto src = args.value("source", nlohmann::json::object());
  r.name = src.value("name", "");
  r.withOwner = run.withOwner();
  r.forAllAgents = args.value("forAllAgents", false);
  r.trustOwner = src.value("trust", "untrusted") != "untrusted";
  if (src.value("type", "") == "http" && src.contains("url") && src["url"].is_string()) {
    r.httpUrl = src["url"].get<std::string>();
    r.localReason = localNetworkReason(r.httpUrl);
  }
  if (src.value("type", "") == "ftp" && src.contains("url") && src["url"].is_string()) {
    r.ftpUrl = src["url"].get<std::string>();
    r.localReason = ftpLocalReason(r.ftpUrl);
    r.ftpLogin = src.value("usernameSecret", "") + " and " + src.value("passwordSecret", "");
    r.ftpFetch = src.contains("fetch") && src["fetch"].is_boolean() && src["fetch"].get<bool>();
  }
  if (src.value("type", "") == "command" && !commandWordsProblem(src)) {
    const std::string mode = src.contains("mode") && src["mode"].is_string() ? src["mode"].get<std::string>() : "interval";
    const long long every = src.contains("intervalSec") && src["intervalSec"].is_number_integer() ? src["intervalSec"].get<long long>() : 900;
    r.commandLine = "`" + config::shownCommandLine(src["command"].get<std::vector<std::string>>()) +
                    "` in the sandbox of agent '" + (r.forAllAgents ? std::string("main") : run.req.agent) + "', " +
                    (mode == "lines" ? std::string("all the time, each line it prints an event")
                                     : "every " + std::to_string(every) + " s");
  }
  const std::string type = src.value("type", "");
  for (const auto& t : run.config->pine.sourceTypes)
    if (t.name == type) r.program = "'" + t.name + "' (" + t.file + ")";
  if (type == "mqtt" && src.contains("url") && src["url"].is_string()) {
    r.connectsTo = src["url"].get<std::string>();
    // The certificate it would trust is part of what the owner says yes to: a CA the agent chose
    // lets whoever holds its key pose as the server (and hear the login).
    if (src.contains("caFile") && src["caFile"].is_string())
      r.connectsTo += ", trusting the certificate authority in " + policy::quoteText(src["caFile"].get<std::string>()) +
                      " instead of the system's";
  }
  if (type == "webhook") {
    r.webhook = "/hooks/" + r.name;
    r.webhookOpen = src.value("open", false);
  }
  if (src.value("type", "") == "folder" && src.contains("path") && src["path"].is_string()) {
    std::string path = src["path"].get<std::string>();
    r.folder = path;
    std::string ws = run.services.home().agents() + "/" + run.req.agent + "/workspace/";
    r.folderInsideWorkspace = path.rfind(ws, 0) == 0 && path.size() > ws.size() && path.find("/..") == std::string::npos &&
                              path.find("/./") == std::string::npos;
  }
  return r;
}

kj::Promise<ToolAnswer> BrokerTools::addSource(const nlohmann::json& args) {
  nlohmann::json entry = args["source"];
  const std::string name = entry.value("name", "");
  const bool forAll = args.value("forAllAgents", false);
  if (!forAll) entry["agent"] = run_.req.agent;
  // What the owner confirmed: the question named the address as local or public.
  if (entry.value("type", "") == "http" && entry.contains("url") && entry["url"].is_string())
    entry["network"] = localNetworkReason(entry["url"].get<std::string>()).empty() ? "public" : "local";
  if (entry.value("type", "") == "ftp" && entry.contains("url") && entry["url"].is_string())
    entry["network"] = ftpLocalReason(entry["url"].get<std::string>()).empty() ? "public" : "local";
  // A webhook with a secret: pined makes it first (the entry names it, and is checked against .env).
  kj::Promise<std::string> secretName = std::string();
  if (entry.value("type", "") == "webhook" && !entry.value("open", false)) {
    auto req = run_.services.supervisor().makeHookSecretRequest();
    req.setSource(name);
    secretName = req.send().then([](auto&& r) { return std::string(r.getName()); });
  }
  return secretName.then(
      [this, entry, name, forAll](std::string secret) mutable {
        if (!secret.empty()) entry["secret"] = secret;
        return addToPineYaml("sources", entry, "source '" + name + "'").then([this, name, forAll, secret](std::optional<std::string> e) {
          if (e)
            return toolError("the source was not added:\n" + *e +
                             (secret.empty() ? "" : "\n(.env keeps the entry " + secret + " pine made for it)"));
          run_.services.reloadConfiguration();
          audit("source.add", {{"agent", run_.req.agent}, {"session", run_.req.session}, {"task", run_.taskId},
                               {"source", name}, {"forAllAgents", forAll}});
          std::string text = "source '" + name + "' added; it runs once something subscribes to it (subscribe)";
          if (!secret.empty())
            text += ". Its address is /hooks/" + name + " on pine's control API; its secret is the .env entry " + secret +
                    " (you are not shown the value: the owner reads it there, or replaces it with `pinectl secret set " +
                    secret + "`, and gives it to the sender)";
          return ToolAnswer{text, false};
        });
      },
      [name](kj::Exception&& e) {
        return kj::Promise<ToolAnswer>(toolError("the source was not added: pine could not make the webhook's secret: " +
                                                 std::string(e.getDescription().cStr())));
      });
}

kj::Promise<ToolAnswer> BrokerTools::addSkill(const nlohmann::json& args) {
  NewSkill skill{args.value("name", ""), args.value("description", ""), args.value("instructions", "")};
  bool forAll = args.value("forAllAgents", false);
  nlohmann::json entry = {{"name", skill.name}};
  if (!forAll) entry["agent"] = run_.req.agent;
  // pine.yaml must take the entry before the file is written; the file goes first all the same:
  // pine.yaml's entry is refused while its SKILL.md is missing.
  std::string why;
  if (!appendToList(readOrEmpty(run_.services.home().root + "/pine.yaml"), "skills", entry.dump(), why)) return toolError(why);
  std::string path = "skills/" + skill.name + "/SKILL.md";
  return changeConfig(path, skillFile(skill), "skill '" + skill.name + "'")
      .then([this, entry, name = skill.name](std::optional<std::string> e) -> kj::Promise<std::optional<std::string>> {
        if (e) return e;
        return addToPineYaml("skills", entry, "skill '" + name + "' listed");
      })
      .then([this, name = skill.name, forAll](std::optional<std::string> e) {
        if (e) return toolError("the skill was not added:\n" + *e);
        run_.services.reloadConfiguration();
        audit("skill.add", {{"agent", run_.req.agent}, {"session", run_.req.session}, {"task", run_.taskId}, {"skill", name},
                            {"forAllAgents", forAll}});
        return ToolAnswer{"skill '" + name + "' added" + (forAll ? " for all agents" : "") +
                              "; it is in the skills index from the next task on",
                          false};
      });
}

kj::Promise<ToolAnswer> BrokerTools::createAgent(const nlohmann::json& args) {
  std::string id = args.value("id", "");
  std::vector<std::string> tools = {"read", "write", "edit", "grep", "find", "ls", "bash"};
  if (args.contains("tools")) tools = args["tools"].get<std::vector<std::string>>();  // checked: strings only
  std::string yaml = "# Created by agent " + run_.req.agent + " (task " + run_.taskId + "), approved by the owner.\n" +
                     "description: " + nlohmann::json(args.value("description", "")).dump() + "\n" +
                     "mode: " + args.value("mode", "auto") + "\n" + "tools: " + nlohmann::json(tools).dump() + "\n";
  auto req = run_.services.supervisor().createAgentRequest();
  req.setId(id);
  req.setAgentYaml(yaml);
  req.setInstructions(args.value("instructions", ""));
  req.setReason("agent '" + id + "' asked for by " + run_.req.agent + ", task " + run_.taskId);
  return req.send().then([this, id](auto&& r) {
    if (!r.getOk()) return toolError("the agent was not created:\n" + joinErrors(r.getErrors()));
    run_.services.reloadConfiguration();
    audit("agent.create", {{"agent", id}, {"by", run_.req.agent}, {"session", run_.req.session}, {"task", run_.taskId}});
    return ToolAnswer{"agent '" + id + "' created; delegate to it or the owner can message it", false};
  });
}

}  // namespace pine
