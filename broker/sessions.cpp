#include "broker/sessions.h"

#include "broker/policy/taint.h"
#include "common/log.h"

namespace pine {
namespace {

std::optional<config::Mode> modeNamed(const std::string& s) {
  if (s == "manual") return config::Mode::Manual;
  if (s == "auto") return config::Mode::Auto;
  if (s == "bypass") return config::Mode::Bypass;
  return std::nullopt;
}

}  // namespace

Sessions::Sessions(store::Store& store, const std::shared_ptr<const config::Home>& config, Notify notifyOwner)
    : store_(store), config_(config), notify_(std::move(notifyOwner)) {}

std::string Sessions::conversationOf(const std::string& session) {
  auto p = session.find("+sub");
  return p == std::string::npos ? session : session.substr(0, p);
}

policy::SessionFacts Sessions::facts(const config::AgentConfig& agent, const std::string& sessionName,
                                     bool untrustedRun) const {
  const std::string session = conversationOf(sessionName);
  policy::SessionFacts f;
  f.configuredMode = config_->effectiveMode(agent);
  f.modeOverride = modeSwitch(agent.id);
  auto row = store_.session(agent.id, session);
  f.tainted = row && row->tainted;
  f.bypassAnyway = row && row->bypassAnyway;
  f.untrustedRun = untrustedRun;
  f.bypassWhenTainted = config_->pine.security.bypassWhenTainted;
  f.shellNetwork = agent.sandbox.network;
  f.mainConversation = session == "main";
  for (auto& g : store_.grants(agent.id, session)) {
    if (g.kind == "always") f.always.push_back({g.value, g.whileTainted});
    if (g.kind == "network") {
      f.shellNetwork = g.value == "all" ? config::Network::All
                       : f.shellNetwork == config::Network::All ? config::Network::All
                                                                : config::Network::Localhost;
      if (g.whileTainted) f.networkGrantedWhileTainted = true;
    }
  }
  return f;
}

bool Sessions::tainted(const std::string& agent, const std::string& sessionName) const {
  auto row = store_.session(agent, conversationOf(sessionName));
  return row && row->tainted;
}

void Sessions::markTainted(const std::string& agent, const std::string& sessionName, const std::string& reason) {
  const std::string session = conversationOf(sessionName);
  if (config_->pine.security.taint == config::TaintPolicy::Off && session.find("~u") == std::string::npos) return;
  auto row = store_.session(agent, session);
  store::SessionRow s;
  if (row) s = *row;
  s.agent = agent;
  s.session = session;
  if (s.tainted) return;
  s.tainted = true;
  s.taintReason = reason;
  if (!s.createdMs) s.createdMs = nowMs();
  s.updatedMs = nowMs();
  store_.putSession(s);
  audit("session.taint", {{"agent", agent}, {"session", session}, {"reason", reason}});
  auto a = config_->agents.find(agent);
  if (a == config_->agents.end()) return;
  bool paused = effectiveMode(a->second) == config::Mode::Bypass && !config_->pine.security.bypassWhenTainted &&
                !s.bypassAnyway;
  if (paused && notify_)
    notify_(agent, "bypass is paused in session " + session + ": it has read outside content (" + reason +
                       "). It behaves like auto until you reset it.");
}

void Sessions::afterRun(const std::string& agent, const std::string& session, bool subagent) {
  bool isTainted = tainted(agent, session);
  if (!isTainted || subagent || policy::taintAfterRun(config_->pine.security.taint, session, isTainted)) return;
  auto row = store_.session(agent, session);
  if (!row) return;
  row->tainted = false;
  row->taintReason.clear();
  row->updatedMs = nowMs();
  store_.putSession(*row);
}

void Sessions::addGrant(const std::string& agent, const std::string& session, const std::string& kind,
                        const std::string& value, bool whileTainted) {
  store_.addGrant({agent, conversationOf(session), kind, value, whileTainted, nowMs()});
}

Sessions::Access Sessions::granted(const std::string& agent, const std::string& session) const {
  Access a;
  for (auto& g : store_.grants(agent, conversationOf(session))) {
    if (g.kind == "read") a.read.push_back(g.value);
    if (g.kind == "write") a.write.push_back(g.value);
    if (g.kind == "network") a.network = g.value;
  }
  return a;
}

std::optional<config::Mode> Sessions::modeSwitch(const std::string& agent) const {
  for (auto& [who, mode] : store_.modeSwitches())
    if (who == agent) return modeNamed(mode);
  return std::nullopt;
}

void Sessions::setModeSwitch(const std::string& agent, config::Mode mode) {
  store_.setModeSwitch(agent, config::enumName(mode), nowMs());
}

config::Mode Sessions::effectiveMode(const config::AgentConfig& agent) const {
  auto o = modeSwitch(agent.id);
  return o ? *o : config_->effectiveMode(agent);
}

void Sessions::reset(const std::string& agent, const std::string& session) {
  store_.resetSession(agent, session);
  audit("session.reset", {{"agent", agent}, {"session", session}});
}

}  // namespace pine
