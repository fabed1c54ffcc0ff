// add_mcp_server: an agent asks for a remote MCP server (a `url`) in its own agent.yaml. Asked in
// every mode (policy/approval_rules: Decide::AddMcpServer), the question naming the server and its
// address; written by pined like every setup change. Only what is harmless to leave to an agent
// is offered: a name, an address, and approval that may be stricter. A local program (`command`)
// runs with pine's rights and headers carry the owner's secrets: both are the owner's to write.
// The server always taints: whatever it answers is a stranger's text.
#include <fmt/format.h>

#include "broker/broker_tools.h"
#include "broker/yaml_blocks.h"
#include "common/fd.h"
#include "common/log.h"
#include "common/names.h"
#include "common/web_address.h"

namespace pine {
namespace {

const char* kOwnersKeys[] = {"command", "env", "headers", "bundled", "taints", "readOnly"};

// agents/<id>/agent.yaml or agent.json: the file as changeConfig names it.
std::string agentFileName(const config::AgentConfig& agent) {
  const bool json = agent.file.size() >= 5 && agent.file.compare(agent.file.size() - 5, 5, ".json") == 0;
  return "agents/" + agent.id + (json ? "/agent.json" : "/agent.yaml");
}

}  // namespace

std::optional<std::string> checkMcpServerArgs(const RunContext& run, const nlohmann::json& args) {
  if (!args.is_object() || !args.contains("name") || !args["name"].is_string() || !args.contains("url") ||
      !args["url"].is_string())
    return "\"name\" (the server's name in your tools, mcp__NAME__...) and \"url\" (its address) are required";
  for (const char* key : kOwnersKeys)
    if (args.contains(key))
      return fmt::format("\"{}\" is the owner's to write in agent.yaml: add_mcp_server sets up a remote server by "
                         "its name and address only",
                         key);
  for (auto& [key, value] : args.items())
    if (key != "name" && key != "url" && key != "approve")
      return "add_mcp_server takes \"name\", \"url\" and \"approve\" (tainted or always); not \"" + key + "\"";
  const std::string name = args["name"].get<std::string>(), url = args["url"].get<std::string>();
  if (!isValidAgentId(name) || name.find("__") != std::string::npos)
    return "a server's name is 1 to 64 characters of [a-z0-9_-], not starting with '-', without '__'";
  if (run.agent().mcpServers.count(name)) return "an MCP server '" + name + "' exists; pick another name";
  if (args.contains("approve") &&
      !(args["approve"].is_string() && (args["approve"] == "tainted" || args["approve"] == "always")))
    return "\"approve\" is tainted (the default: calls wait once the conversation read outside content) or always";
  if (url.size() > 2048) return "\"url\" is at most 2048 bytes";
  const bool https = url.rfind("https://", 0) == 0, http = url.rfind("http://", 0) == 0;
  if (!https && !http) return "\"url\" is an https:// address (http:// only on your local network)";
  const std::string rest = url.substr(https ? 8 : 7);
  const std::string authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.empty()) return "\"url\" names no host";
  if (authority.find('@') != std::string::npos)
    return "\"url\" carries no login (user:password@): credentials are the owner's to set in headers";
  for (unsigned char c : url)
    if (c <= 0x20 || c == 0x7f) return "\"url\" has a space or a control character";
  if (http && localNetworkReason(url).empty())
    return "a public server is reached over https only; http:// is for an address on your local network";
  return std::nullopt;
}

kj::Promise<ToolAnswer> BrokerTools::addMcpServer(const nlohmann::json& args) {
  const std::string name = args.value("name", ""), url = args.value("url", "");
  const auto& agent = run_.agent();
  nlohmann::ordered_json entry = {{"url", url}, {"taints", true}, {"approve", args.value("approve", "tainted")}};
  const std::string file = agentFileName(agent);
  std::string text;
  try {
    text = readFile(agent.file);
  } catch (std::exception&) {
    text = "";  // an agent folder may hold an empty or no agent.yaml: the defaults
  }
  std::optional<std::string> updated;
  std::string why;
  if (file.size() > 5 && file.compare(file.size() - 5, 5, ".json") == 0) {
    auto doc = nlohmann::ordered_json::parse(text.empty() ? "{}" : text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) return toolError("agent.json is not a JSON object; the owner has to fix it");
    doc["mcpServers"][name] = entry;
    updated = doc.dump(2) + "\n";
  } else {
    updated = appendToBlock(text, "mcpServers", name + ": " + entry.dump(), why);
  }
  if (!updated) return toolError("the MCP server was not added: " + why);
  return changeConfig(file, *updated, "MCP server '" + name + "' at " + url)
      .then([this, name, url](std::optional<std::string> e) {
        if (e) return toolError("the MCP server was not added:\n" + *e);
        run_.services.reloadConfiguration();
        audit("mcp.add", {{"agent", run_.req.agent}, {"session", run_.req.session}, {"task", run_.taskId},
                          {"server", name}, {"url", url}});
        return ToolAnswer{"MCP server '" + name + "' added; its tools (mcp__" + name +
                              "__...) are offered from your next task on, and what it answers is outside content",
                          false};
      });
}

}  // namespace pine
