// The tools that set things up or listen (layers 4, 5, 8 and "What no mode
// opens"): subscribe, add_skill, add_source, create_agent, request_access.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "broker/policy/approval_rules.h"
#include "broker/policy/verdict.h"
#include "config/model.h"

namespace pine::policy {

// Reduced runs have no subscribe tool, and a run not in a conversation with the owner (started by
// a schedule or by another agent) may not subscribe: refused. Tainted: asked ("always" offered);
// manual: asked unless "always"; effective bypass and auto: allowed.
Verdict decideSubscribe(const SessionFacts& facts);

// What the owner's `pinectl subscribe` and an agent's subscribe tool both refuse, as a sentence:
// an owner channel (telegram), a source that belongs to another agent, a malformed topic filter.
std::optional<std::string> subscriptionProblem(const config::Source& source, const std::string& agent,
                                               const std::string& topic);

// Why a subscription made earlier gets no events under `sources` now (its source left pine.yaml,
// or subscribing to it would be refused now), or nothing when it is delivered.
std::optional<std::string> heldSubscriptionReason(const std::vector<config::Source>& sources,
                                                  const std::string& source, const std::string& agent);

struct AddSkillRequest {
  std::string name;
  bool forAllAgents = false;
};
// Reduced runs: refused. Tainted: refused without asking, in every mode. For
// all agents: the main agent only, asked. From a side conversation: asked
// (not in bypass). Manual: asked. Never "always".
Verdict decideAddSkill(const config::AgentConfig& agent, const SessionFacts& facts, const AddSkillRequest& req);

struct AddSourceRequest {
  std::string name;
  bool withOwner = true;              // a conversation with the owner (not a schedule, event or delegation)
  bool forAllAgents = false;
  bool folderInsideWorkspace = false; // a folder source whose folder lies in the agent's own workspace
  bool trustOwner = false;            // asks for "trust": "owner"
  std::string httpUrl = {};           // an http source's address: the question names it
  std::string localReason = {};       // why that address is on the local network ("": public)
  std::string commandLine = {};       // a command source: the command line as shown, with where and when it runs
  std::string program = {};           // a registered source type: its name and file, as the question shows it
  std::string connectsTo = {};        // an mqtt source's server address
  std::string folder = {};            // a folder source's path, as asked for (named in the question)
  std::string ftpUrl = {};            // an ftp source's folder: the question names it (localReason as for http)
  std::string ftpLogin = {};          // the .env entries it logs in with ("FTP_USER and FTP_PASSWORD")
  bool ftpFetch = false;              // ...and writes each new file into the agent's inbox
  std::string webhook = {};           // a webhook source: "/hooks/NAME" (events from whoever sends there)
  bool webhookOpen = false;           // ...accepting anyone, without a secret
};
// Reduced runs and conversations without the owner: refused. For all agents:
// the main agent only. A folder inside its workspace, untrusted, for this agent
// goes through unless tainted or manual; everything else is asked, in every
// mode (a command source always, showing its command line). Never "always".
Verdict decideAddSource(const config::AgentConfig& agent, const SessionFacts& facts, const AddSourceRequest& req);

// The main agent only, reduced runs never; always asked, in every mode.
Verdict decideCreateAgent(const config::AgentConfig& agent, const SessionFacts& facts);

// Always asked; reduced runs cannot ask for more.
Verdict decideRequestAccess(const SessionFacts& facts);

}  // namespace pine::policy
