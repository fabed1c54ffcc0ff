#include "broker/policy/setup_rules.h"

#include "config/schema.h"

namespace pine::policy {
namespace {

bool isTainted(const SessionFacts& f) { return f.tainted || f.untrustedRun; }

const char* kReducedRun = "a run started by outside content (or by a separate subscription) ";

}  // namespace

Verdict decideSubscribe(const SessionFacts& facts) {
  if (facts.untrustedRun) return refused(std::string(kReducedRun) + "has no subscribe tool");
  if (!facts.withOwner)
    return refused("subscribe is only for a conversation with you: this run was started by a schedule or another "
                   "agent, and what it starts listening to would arrive where you do not talk");
  config::Mode mode = effectiveMode(facts);
  if (mode == config::Mode::Bypass) return allowed("bypass mode");
  const std::string scope = "tool:subscribe";
  if (isTainted(facts)) {
    if (alwaysCovers(facts, scope)) return allowed("your 'always' answer (" + scope + ") covers it");
    return asked("subscribe waits for your approval: " + taintWords(facts) +
                     ", and text from outside must not make an agent start listening to something",
                 scope);
  }
  if (mode == config::Mode::Manual) {
    if (alwaysCovers(facts, scope)) return allowed("your 'always' answer (" + scope + ") covers it");
    return asked("subscribe waits for your approval: manual mode", scope);
  }
  return allowed("auto mode, a conversation that has read no outside content");
}

std::optional<std::string> subscriptionProblem(const config::Source& source, const std::string& agent,
                                               const std::string& topic) {
  if (source.type == "telegram") return "source '" + source.name + "' is an owner channel (telegram): it talks to agents itself";
  if (!source.agent.empty() && source.agent != agent)
    return "source '" + source.name + "' belongs to agent " + source.agent + ", not " + agent;
  if (!topic.empty())
    if (auto problem = config::detail::topicPatternProblem(topic, true); !problem.empty()) return "\"topic\": " + problem;
  return std::nullopt;
}

std::optional<std::string> heldSubscriptionReason(const std::vector<config::Source>& sources,
                                                  const std::string& source, const std::string& agent) {
  for (auto& c : sources)
    if (c.name == source) return subscriptionProblem(c, agent, "");
  return "no source '" + source + "' in pine.yaml";
}

Verdict decideAddSkill(const config::AgentConfig& agent, const SessionFacts& facts, const AddSkillRequest& req) {
  if (facts.untrustedRun) return refused(std::string(kReducedRun) + "has no add_skill tool");
  if (isTainted(facts))
    return refused("add_skill is refused because " + taintWords(facts) +
                   ": text from outside must not become a standing instruction; reset the conversation and ask again");
  if (req.forAllAgents) {
    if (agent.id != "main")
      return refused("only the main agent adds skills for all agents; agent '" + agent.id + "' can add one for itself");
    return asked("a skill for all agents: you see its description and instructions before it exists");
  }
  config::Mode mode = effectiveMode(facts);
  if (!facts.mainConversation && mode != config::Mode::Bypass)
    return asked("a skill added from a side conversation: you see its description and instructions before it exists");
  if (mode == config::Mode::Manual) return asked("manual mode: you see every skill before it exists");
  return allowed("a skill for itself from its main conversation");
}

Verdict decideAddSource(const config::AgentConfig& agent, const SessionFacts& facts, const AddSourceRequest& req) {
  if (facts.untrustedRun) return refused(std::string(kReducedRun) + "has no add_source tool");
  if (!req.withOwner)
    return refused("add_source works only in a conversation with you, not in a run started by a schedule, an event "
                   "or another agent");
  if (req.forAllAgents && agent.id != "main")
    return refused("only the main agent sets up sources for all agents; agent '" + agent.id +
                   "' can set one up for itself");
  const bool tainted = isTainted(facts);
  const bool manual = effectiveMode(facts) == config::Mode::Manual;
  const bool command = !req.commandLine.empty();
  // Only a folder is ever "inside the workspace": anything that also runs or connects is asked.
  const bool runsOrConnects = command || !req.program.empty() || !req.connectsTo.empty() || !req.httpUrl.empty() ||
                              !req.ftpUrl.empty() || !req.webhook.empty();
  if (req.folderInsideWorkspace && !runsOrConnects && !req.forAllAgents && !req.trustOwner && !tainted && !manual)
    return allowed("a folder inside the agent's own workspace");
  std::string why;
  auto add = [&](const std::string& w) { why += (why.empty() ? "" : "; ") + w; };
  // The owner sees a command line before it is set up, in every mode, bypass included (layer 5).
  if (command) add("it runs the command " + req.commandLine);
  else if (!req.program.empty())
    add("it starts your registered source program " + req.program +
        " with pine's rights, outside any sandbox, with the options the agent gave");
  else if (!req.connectsTo.empty())
    add("it connects to " + req.connectsTo + " as an MQTT client (its messages become events)");
  else if (!req.webhook.empty())
    add(req.webhookOpen
            ? "it opens the webhook " + req.webhook +
                  " to ANYONE who can reach pine's control port, WITHOUT A SECRET (open: true): whatever they send "
                  "becomes an event"
            : "it opens the webhook " + req.webhook +
                  " on pine's control port: whoever holds its secret (which pine makes and stores in .env; the agent "
                  "is told only its name) can send events");
  else if (!req.folder.empty() && !req.folderInsideWorkspace)
    add("it watches the folder " + req.folder +
        ", outside the agent's workspace: pine reads it, and its files' names and hashes become events");
  else if (!req.folderInsideWorkspace)
    add("it opens something new (a folder outside the workspace, a connection or a port)");
  if (!req.httpUrl.empty())
    add(req.localReason.empty()
            ? "it fetches " + req.httpUrl + ", a public address (never followed into your local network)"
            : "it fetches " + req.httpUrl + " on your LOCAL NETWORK (" + req.localReason + ")");
  if (!req.ftpUrl.empty())
    add("it lists the FTP folder " + req.ftpUrl +
        (req.localReason.empty() ? ", a public address (never followed into your local network)"
                                 : " on your LOCAL NETWORK (" + req.localReason + ")") +
        ", logging in with your .env entries " + req.ftpLogin +
        (req.ftpFetch ? ", and fetches each new or changed file into the agent's inbox" : ""));
  if (req.forAllAgents) add("it is a source for all agents");
  if (req.trustOwner) add("its reports would count as yours (trust: owner)");
  if (tainted) add(taintWords(facts));
  if (manual) add("manual mode");
  return asked("add_source waits for your approval: " + why);
}

Verdict decideCreateAgent(const config::AgentConfig& agent, const SessionFacts& facts) {
  if (facts.untrustedRun) return refused(std::string(kReducedRun) + "has no create_agent tool");
  if (agent.id != "main") return refused("only the main agent can create agents");
  std::string note = isTainted(facts) ? "; note: " + taintWords(facts) : "";
  return asked("create_agent always asks you and shows the new agent's instructions" + note);
}

Verdict decideRequestAccess(const SessionFacts& facts) {
  if (facts.untrustedRun)
    return refused(std::string(kReducedRun) + "keeps the untrusted profile and cannot ask for more");
  std::string note = isTainted(facts) ? "; note: " + taintWords(facts) : "";
  return asked("request_access: you decide every grant" + note);
}

}  // namespace pine::policy
