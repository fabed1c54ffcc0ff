#include "supervisor/mcp_server.h"

#include <unistd.h>

#include <stdexcept>

#include "config/secrets.h"
#include "supervisor/browser_start.h"
#include "supervisor/mcp_remote_start.h"
#include "supervisor/supervisor.h"
#include "supervisor/web_start.h"

namespace pine {

std::optional<std::string> mcpFillSecrets(const std::string& value,
                                          const std::function<std::optional<std::string>(const std::string&)>& secret,
                                          std::string& missing, std::vector<std::string>* used) {
  std::string filled;
  size_t at = 0;
  for (const auto& ref : config::findSecretRefs(value, nullptr)) {
    filled += value.substr(at, ref.offset - at);
    auto v = secret(ref.name);
    if (!v) {
      missing = ref.name;
      return std::nullopt;
    }
    filled += *v;
    if (used) used->push_back(*v);
    at = ref.offset + std::string("${secret:").size() + ref.name.size() + 1;
  }
  filled += value.substr(std::min(at, value.size()));
  return filled;
}

std::optional<std::vector<std::string>> mcpServerEnv(
    const std::map<std::string, std::string>& env,
    const std::function<std::optional<std::string>(const std::string&)>& secret, std::string& why) {
  std::vector<std::string> out;
  for (const auto& [name, value] : env) {
    std::string missing;
    auto filled = mcpFillSecrets(value, secret, missing);
    if (!filled) {
      why = "env " + name + " names the secret " + missing + ", which is not in .env (pinectl secret set " + missing + ")";
      return std::nullopt;
    }
    if (filled->find('\0') != std::string::npos) {
      why = "env " + name + " would hold a NUL byte";  // never the value itself
      return std::nullopt;
    }
    out.push_back(name + "=" + *filled);
  }
  return out;
}

std::string mcpServerProgram(const std::string& command0, const std::string& home, std::string& why) {
  std::string path;
  if (command0.find('/') != std::string::npos) {
    path = command0[0] == '/' ? command0 : home + "/" + command0;
  } else {
    for (const char* dir : {"/usr/local/bin", "/usr/bin", "/bin"})
      if (access((std::string(dir) + "/" + command0).c_str(), X_OK) == 0) {
        path = std::string(dir) + "/" + command0;
        break;
      }
  }
  if (path.empty() || access(path.c_str(), X_OK) != 0) {
    why = "no program '" + command0 + "' to run (a path relative to pine's home, an absolute one, or a name in "
          "/usr/local/bin, /usr/bin or /bin)";
    return "";
  }
  return path;
}

StartedProgram startMcpServer(Supervisor& sup, kj::AsyncIoContext& io, const std::string& agent,
                              const std::string& server) {
  auto cfg = sup.config();
  if (!cfg) throw std::runtime_error("no configuration is loaded");
  auto a = cfg->agents.find(agent);
  if (a == cfg->agents.end()) throw std::runtime_error("no agent '" + agent + "'");
  auto s = a->second.mcpServers.find(server);
  if (s == a->second.mcpServers.end())
    throw std::runtime_error("agent '" + agent + "' has no MCP server '" + server + "' (agent.yaml mcpServers)");
  if (!s->second.url.empty()) return startMcpRemote(sup, io, agent, server, s->second);  // mcp_remote_start.cpp
  if (s->second.bundled == "web") return startWebServer(sup, io, agent, s->second);  // pine-web, in the egress sandbox
  if (s->second.bundled == "browser") return startBrowserServer(sup, agent, s->second);  // pine-browser and Chromium
  if (s->second.command.empty())
    throw std::runtime_error("MCP server '" + server + "' of agent '" + agent + "' is not a local server ('command')");
  std::string why;
  OwnerProgram p;
  p.argv = s->second.command;
  p.argv[0] = mcpServerProgram(p.argv[0], sup.home().root, why);
  if (p.argv[0].empty()) throw std::runtime_error(why);
  auto& secrets = sup.secrets();
  auto env = mcpServerEnv(s->second.env, [&](const std::string& n) { return secrets.get(n); }, why);
  if (!env) throw std::runtime_error(why);
  p.env = std::move(*env);
  // Outside data/, which the broker writes: nothing the broker leaves there steers this program.
  p.dir = sup.home().root + "/mcp-data/" + agent + "/" + server;
  p.role = "mcp";
  p.name = agent + "/" + server;
  return startOwnerProgram(sup, io, p);
}

}  // namespace pine
