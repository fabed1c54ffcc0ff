// Conversations (pine-security.md layer 4 and "Modes"): which conversation a session
// belongs to, its taint, the owner's grants and "always" answers, mode switches, and the
// facts the rules decide a call by. Everything lives in the store, so a crash of the broker
// loses none of it; grants and mode switches end when the conversation is reset or pined
// restarts (Store::beginBoot). Touches only the store's sessions, grants and mode switches,
// and tells the owner when bypass pauses.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/policy/approval_rules.h"
#include "broker/store/store.h"
#include "config/model.h"

namespace pine {

class Sessions {
 public:
  using Notify = std::function<void(const std::string& agent, const std::string& text)>;
  // `config` is the broker's configuration in force (re-read on reload): read on every call.
  Sessions(store::Store& store, const std::shared_ptr<const config::Home>& config, Notify notifyOwner);

  // A sub-agent's session ("<conversation>+subN") shares its conversation's taint and grants.
  static std::string conversationOf(const std::string& session);

  policy::SessionFacts facts(const config::AgentConfig& agent, const std::string& session, bool untrustedRun) const;
  bool tainted(const std::string& agent, const std::string& session) const;
  // Marks the conversation (once; audited); not in security.taint: off, except untrusted sessions.
  void markTainted(const std::string& agent, const std::string& session, const std::string& reason);
  // security.taint: run forgets the mark when a task of the conversation ends (not for sub-agents).
  void afterRun(const std::string& agent, const std::string& session, bool subagent);

  // What the owner granted the conversation (request_access, "always"), until reset or pined restarts.
  void addGrant(const std::string& agent, const std::string& session, const std::string& kind,
                const std::string& value, bool whileTainted);
  struct Access {
    std::vector<std::string> read, write;
    std::string network = "none";
  };
  Access granted(const std::string& agent, const std::string& session) const;

  // pinectl mode: the agent's mode until pined restarts.
  std::optional<config::Mode> modeSwitch(const std::string& agent) const;
  void setModeSwitch(const std::string& agent, config::Mode mode);
  config::Mode effectiveMode(const config::AgentConfig& agent) const;

  // pinectl reset: the conversation's messages, taint, grants and "bypass anyway" go.
  void reset(const std::string& agent, const std::string& session);

 private:
  store::Store& store_;
  const std::shared_ptr<const config::Home>& config_;
  Notify notify_;
};

}  // namespace pine
