#include "broker/policy/approval_rules.h"

#include <cctype>

#include "common/glob.h"
#include "common/url_origin.h"
#include "common/web_address.h"
#include "broker/policy/profile.h"
#include "broker/policy/setup_rules.h"
#include "broker/policy/quote.h"
#include "common/tool_table.h"

namespace pine::policy {
namespace {

std::string serverOf(const ToolCall& call) { return call.server.empty() ? mcpServerOf(call.tool) : call.server; }

// The name patterns look at: MCP tools always as "mcp__<server>__<tool>".
std::string fullName(const ToolCall& call) {
  if (!call.server.empty() && !startsWith(call.tool, "mcp__")) return "mcp__" + call.server + "__" + call.tool;
  return call.tool;
}

Verdict allow(std::string why) { return allowed(std::move(why)); }
Verdict refuse(std::string why) { return refused(std::move(why)); }
Verdict ask(std::string why, bool offerAlways = false, std::string scope = {}) {
  return asked(std::move(why), offerAlways ? std::move(scope) : std::string{});
}

// What the dialog calls the action: "bash 'git push'".
std::string describe(const ToolCall& call) {
  std::string subject = callSubject(call);
  return fullName(call) + (subject.empty() ? "" : " " + quoteText(subject));
}

bool webAllowsPrivate(const config::AgentConfig& agent) {
  for (const auto& [name, s] : agent.mcpServers)
    if (s.bundled == "web" && s.allowPrivate) return true;
  return false;
}

bool hostListed(const std::string& host, const std::vector<std::string>& list) {
  for (const auto& entry : list) {
    std::string e = entry;
    for (auto& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (startsWith(e, "*.") ? (host.size() > e.size() - 1 && endsWith(host, e.substr(1))) : host == e) return true;
  }
  return false;
}

// The web route: a host the agent's web tools could read (a browser reads any; the web server
// within its allowHosts and outside its denyHosts). nullopt when one of them may.
std::optional<std::string> webHostRefusal(const config::AgentConfig& agent, const std::string& origin) {
  size_t start = origin.find("://") + 3;
  std::string host = origin.substr(start, origin.rfind(':') - start);
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
  std::string why;
  for (const auto& [name, s] : agent.mcpServers) {
    if (s.bundled == "browser") return std::nullopt;
    if (s.bundled != "web") continue;
    if (hostListed(host, s.denyHosts)) why = "host " + host + " is on the denyHosts of web server '" + name + "'";
    else if (!s.allowHosts.empty() && !hostListed(host, s.allowHosts))
      why = "host " + host + " is not on the allowHosts of web server '" + name + "'";
    else return std::nullopt;
  }
  return why;
}

// Where the mode in force came from, for the reason the owner reads: the owner's `pinectl mode`,
// the agent's own agent.yaml, or the default (pine.yaml defaults.mode, auto when unset); and a
// bypass paused by what the conversation read.
std::string modeWhy(const config::AgentConfig& agent, const SessionFacts& facts, config::Mode mode) {
  const std::string name = std::string(config::enumName(mode)) + " mode";
  if (effectiveMode(facts) != facts.modeOverride.value_or(facts.configuredMode))
    return name + " (bypass is paused: the conversation has read outside content)";
  if (facts.modeOverride) return name + " (set with pinectl mode until pine restarts)";
  if (agent.mode) return name + " (agent.yaml mode)";
  return name + " (the default: defaults.mode in pine.yaml, auto when unset)";
}

Verdict decide(const config::Home& home, const config::AgentConfig& agent, const SessionFacts& facts,
               const ToolCall& call, config::Mode mode) {
  const bool tainted = facts.tainted || facts.untrustedRun;
  const std::string full = fullName(call);
  const std::string server = serverOf(call);

  // 1. Only the tools this run has. A worker is assumed hostile: its claims about names are checked.
  if (!call.server.empty() && startsWith(call.tool, "mcp__") && mcpServerOf(call.tool) != call.server)
    return refuse("the tool name " + quoteText(call.tool) + " does not belong to MCP server '" + call.server + "'");
  const config::McpServer* mcp = nullptr;
  if (!server.empty()) {
    auto it = agent.mcpServers.find(server);
    if (it == agent.mcpServers.end())
      return refuse("agent '" + agent.id + "' has no MCP server " + quoteText(server) + " (agent.yaml mcpServers)");
    mcp = &it->second;
  }
  RunContext ctx;
  ctx.trust = facts.untrustedRun ? config::Trust::Untrusted : config::Trust::Owner;
  auto tools = toolsForRun(home, agent, ctx);
  if (!tools.count(mcp ? mcpToolSetName(server) : full)) {
    if (facts.untrustedRun)
      return refuse(quoteText(full) + " is not available to a run started by outside content; the agent's " +
                    "agent.yaml 'untrusted' profile can widen it");
    return refuse("agent '" + agent.id + "' has no tool " + quoteText(full) + "; add it to 'tools' in its agent.yaml");
  }

  // 2. Tools with rules of their own (the table's `decide`), some of which hold in every mode.
  const tooltable::Tool* row = mcp ? nullptr : tooltable::findTool(full);
  const std::string taintNote = tainted ? "; note: " + taintWords(facts) : "";
  if (row != nullptr) {
    switch (row->decide) {
      case tooltable::Decide::Rules:
      case tooltable::Decide::Fetch: break;  // the general rules below (the download rule in 6 + 7)
      case tooltable::Decide::Subscribe: return decideSubscribe(facts);
      case tooltable::Decide::CreateAgent: return decideCreateAgent(agent, facts);
      case tooltable::Decide::RequestAccess: return decideRequestAccess(facts);
      case tooltable::Decide::AddMcpServer: {
        // The question names what would be reached; the arguments were checked before (checkMcpServerArgs).
        const bool named = call.args.is_object() && call.args.contains("name") && call.args["name"].is_string() &&
                           call.args.contains("url") && call.args["url"].is_string();
        const std::string name = named ? call.args["name"].get<std::string>() : "",
                          url = named ? call.args["url"].get<std::string>() : "";
        const std::string local = localNetworkReason(url);
        return ask(full + " asks you in every mode: agent '" + agent.id + "' would get the tools of the MCP server " +
                   quoteText(name) + " at " + url +
                   (local.empty() ? "" : ", an address on your LOCAL NETWORK (" + local + ")") +
                   "; what it answers is outside content" + taintNote);
      }
      case tooltable::Decide::AddSourceType:
        if (agent.id != "main") return refuse("only the main agent can add a source type");
        if (tainted)
          return refuse(full + " is refused because " + taintWords(facts) +
                        ": a source type is a program; start a clean conversation for it");
        return ask(full + " asks you every time: a source type is a program that runs with pine's rights");
      case tooltable::Decide::OwnerConfirms:
        if (tooltable::readsOnly(*row, call.args)) return allow("listing only reads");
        return ask(full + " changes pine's configuration; you confirm it" + taintNote);
    }
  }

  // 3. Bypass: nothing waits.
  if (mode == config::Mode::Bypass) return allow(modeWhy(agent, facts, mode));

  // 4. What the owner configured to ask every time.
  for (const auto& p : agent.approve)
    if (approvePatternMatches(p, call))
      return ask(describe(call) + " waits for your approval: agent.yaml approve lists " + quoteText(p));
  if (mcp && mcp->approve == config::McpApprove::Always)
    return ask(describe(call) + " waits for your approval: MCP server '" + server + "' is set to approve: always");

  // 5. Reading is free. A read-only claim counts for MCP tools only.
  if (row != nullptr && tooltable::readsOnly(*row, call.args)) return allow("reading only");
  if (mcp && (mcp->readOnly || call.readOnly)) return allow("a read-only tool of MCP server '" + server + "'");

  const std::string scope = alwaysScope(call);
  const bool covered = alwaysCovers(facts, scope);

  // 6 + 7. Tainted: sending out and acting on the world wait.
  std::string why;
  bool networkCovers = false;  // network granted while tainted counts as "always" here
  if (row != nullptr && row->decide == tooltable::Decide::Fetch) {
    std::string url = call.args.is_object() && call.args.contains("url") && call.args["url"].is_string()
                          ? call.args["url"].get<std::string>()
                          : std::string{};
    if (url.empty()) return refuse("download needs a 'url' argument (a string)");
    auto origin = urlOrigin(url);
    if (!origin) return refuse("download of " + quoteText(url) + " is refused: give a plain http(s)://host/path address");
    bool viaMcp = false;
    for (const auto& [name, s] : agent.mcpServers)
      if (!s.url.empty() && urlOrigin(s.url) == origin) viaMcp = true;
    if (!viaMcp && origin->rfind("https://", 0) != 0 && !webAllowsPrivate(agent))
      return refuse("download of " + quoteText(url) + " is refused: only https addresses are fetched");
    if (!viaMcp && agent.hasWebTools() && facts.shellNetwork == config::Network::None)
      if (auto host = webHostRefusal(agent, *origin)) return refuse("download of " + quoteText(url) + " is refused: " + *host);
    if (!viaMcp && !agent.hasWebTools()) {
      if (facts.shellNetwork == config::Network::None)
        return refuse("download of " + quoteText(url) + " is refused: agent '" + agent.id +
                      "' has no web tools and this conversation has no network access; ask for it with " +
                      "request_access, or set sandbox.network in its agent.yaml");
      if (tainted) {
        why = "the download goes over this conversation's network access";
        networkCovers = true;
      }
    }
  }
  if (tainted && why.empty()) {
    for (const auto& p : agent.approveWhenTainted)
      if (approvePatternMatches(p, call)) {
        why = "agent.yaml approveWhenTainted lists " + quoteText(p);
        break;
      }
  }
  if (tainted && why.empty()) {
    if (full == "send") {
      why = "send delivers a message out of pine";
    } else if (mcp && mcp->approve == config::McpApprove::Tainted) {
      why = "MCP server '" + server + "' is set to approve: tainted";
    } else if (full == "bash" && !agent.sandbox.enabled) {
      why = "the shell runs without a sandbox";
      networkCovers = true;
    } else if (full == "bash" && facts.shellNetwork != config::Network::None) {
      why = "the shell has network access";
      networkCovers = true;
    } else if (full == "delegate") {
      std::string target = callSubject(call);
      auto it = home.agents.find(target);
      if (it == home.agents.end())
        why = "there is no agent " + quoteText(target) + " to tell whether it can reach the internet";
      else if (reachesInternet(it->second))
        why = "agent '" + target + "' can reach the internet";
    }
  }
  if (!why.empty()) {
    if (covered) return allow("your 'always' answer (" + scope + ") covers it");
    if (networkCovers && facts.networkGrantedWhileTainted)
      return allow("you granted network access knowing what the conversation had read");
    return ask(describe(call) + " waits for your approval: " + taintWords(facts) + ", and " + why, true, scope);
  }

  // 8. Manual: everything that changes or sends something.
  if (mode == config::Mode::Manual) {
    if (covered) return allow("your 'always' answer (" + scope + ") covers it");
    if (networkCovers && facts.networkGrantedWhileTainted)
      return allow("you granted network access knowing what the conversation had read");
    return ask(describe(call) + " waits for your approval: " + modeWhy(agent, facts, mode) +
                   ", where every action that changes or sends something waits for you",
               true, scope);
  }
  return allow(modeWhy(agent, facts, mode));
}

}  // namespace

std::string taintWords(const SessionFacts& f) {
  if (f.untrustedRun && !f.tainted) return "the run was started by outside content";
  return "the conversation has read outside content" + (f.taintReason.empty() ? "" : " (" + f.taintReason + ")");
}

std::string callSubject(const ToolCall& call) {
  const char* key = nullptr;
  if (call.tool == "bash") key = "command";
  else if (call.tool == "send") key = "to";
  else if (call.tool == "publish_event") key = "topic";
  else if (call.tool == "delegate") key = "agent";
  if (!key || !call.args.is_object()) return {};
  auto it = call.args.find(key);
  if (it == call.args.end() || it->is_null()) return {};
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

bool approvePatternMatches(std::string_view pattern, const ToolCall& call) {
  size_t colon = pattern.find(':');
  std::string_view toolPart = pattern.substr(0, colon);
  if (!globMatch(toolPart, fullName(call))) return false;
  if (colon == std::string_view::npos) return true;
  return globMatch(pattern.substr(colon + 1), callSubject(call));
}

std::string alwaysScope(const ToolCall& call) {
  std::string server = serverOf(call);
  return server.empty() ? "tool:" + call.tool : "mcp:" + server;
}

config::Mode effectiveMode(const SessionFacts& facts, bool* bypassPaused) {
  if (bypassPaused) *bypassPaused = false;
  if (facts.untrustedRun) return config::Mode::Auto;
  config::Mode m = facts.modeOverride.value_or(facts.configuredMode);
  if (m == config::Mode::Bypass && facts.tainted && !facts.bypassWhenTainted && !facts.bypassAnyway) {
    if (bypassPaused) *bypassPaused = true;
    return config::Mode::Auto;
  }
  return m;
}

bool alwaysCovers(const SessionFacts& facts, const std::string& scope) {
  const bool tainted = facts.tainted || facts.untrustedRun;
  for (const auto& a : facts.always)
    if (a.scope == scope && (!tainted || a.givenWhileTainted)) return true;
  return false;
}

bool reachesInternet(const config::AgentConfig& agent) {
  return agent.hasWebTools() || agent.sandbox.network == config::Network::All ||
         (!agent.sandbox.enabled && agent.hasTool("bash"));
}

Verdict decideToolCall(const config::Home& home, const config::AgentConfig& agent, const SessionFacts& facts,
                       const ToolCall& call) {
  bool paused = false;
  config::Mode mode = effectiveMode(facts, &paused);
  Verdict v = decide(home, agent, facts, call, mode);
  v.bypassPaused = paused;
  return v;
}

}  // namespace pine::policy
