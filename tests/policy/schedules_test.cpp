// Schedules (layer 7).
#include "broker/policy/schedules.h"

#include "tests/policy/helpers.h"

using namespace policy_test;
using namespace pine::policy;

namespace {

SessionFacts facts(Mode mode = Mode::Auto, bool taint = false, bool mainConv = true) {
  SessionFacts f;
  f.configuredMode = mode;
  f.tainted = taint;
  f.mainConversation = mainConv;
  return f;
}

ScheduleRequest req(ScheduleTarget t, int interval = 0) {
  ScheduleRequest r;
  r.target = t;
  r.intervalSec = interval;
  r.task = "water the plants";
  r.agent = t == ScheduleTarget::OtherAgent ? "house" : "";
  return r;
}

}  // namespace

TEST_CASE("schedules: the table") {
  auto main = agent("main");
  auto gonzo = agent("gonzo");
  auto anyway = facts(Mode::Bypass, true);
  anyway.bypassAnyway = true;
  auto untrusted = facts();
  untrusted.untrustedRun = true;
  auto always = facts(Mode::Manual);
  always.always = {AlwaysAnswer{"tool:schedules", false}};
  struct Row {
    const char* name;
    const config::AgentConfig* agent;
    SessionFacts facts;
    ScheduleRequest req;
    Decision want;
    bool alwaysOffered = false;
  };
  using T = ScheduleTarget;
  const Row rows[] = {
      {"this conversation", &gonzo, facts(), req(T::ThisConversation), Decision::Allow},
      {"itself from its main conversation", &gonzo, facts(), req(T::ThisAgent, 3600), Decision::Allow},
      {"interval of a minute", &gonzo, facts(), req(T::ThisConversation, 60), Decision::Allow},
      {"interval under a minute", &gonzo, facts(), req(T::ThisConversation, 59), Decision::Refuse},
      {"negative interval", &gonzo, facts(), req(T::ThisConversation, -5), Decision::Refuse},
      {"itself from a side conversation", &gonzo, facts(Mode::Auto, false, false), req(T::ThisAgent), Decision::Ask},
      {"this side conversation itself", &gonzo, facts(Mode::Auto, false, false), req(T::ThisConversation),
       Decision::Allow},
      {"all agents: gonzo refused", &gonzo, facts(), req(T::AllAgents), Decision::Refuse},
      {"all agents: main asked", &main, facts(), req(T::AllAgents), Decision::Ask},
      {"all agents: main asked in bypass", &main, facts(Mode::Bypass), req(T::AllAgents), Decision::Ask},
      {"another agent: gonzo refused", &gonzo, facts(), req(T::OtherAgent), Decision::Refuse},
      {"another agent: main asked", &main, facts(), req(T::OtherAgent), Decision::Ask},
      {"tainted auto asks", &gonzo, facts(Mode::Auto, true), req(T::ThisConversation), Decision::Ask},
      {"tainted bypass anyway still asks", &gonzo, anyway, req(T::ThisConversation), Decision::Ask},
      {"tainted bypassWhenTainted still asks", &gonzo,
       [] { auto f = facts(Mode::Bypass, true); f.bypassWhenTainted = true; return f; }(), req(T::ThisConversation),
       Decision::Ask},
      {"manual asks, always offered", &gonzo, facts(Mode::Manual), req(T::ThisConversation), Decision::Ask, true},
      {"manual with always", &gonzo, always, req(T::ThisConversation), Decision::Allow},
      {"manual tainted with a clean always: asks, not offered", &gonzo,
       [&] { auto f = always; f.tainted = true; return f; }(), req(T::ThisConversation), Decision::Ask},
      {"bypass from a side conversation", &gonzo, facts(Mode::Bypass, false, false), req(T::ThisAgent),
       Decision::Allow},
      {"reduced run has no tool", &gonzo, untrusted, req(T::ThisConversation), Decision::Refuse},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    auto v = decideSchedule(*r.agent, r.facts, r.req);
    CAPTURE(v.reason);
    CHECK(std::string(decisionName(v.decision)) == decisionName(r.want));
    CHECK(v.alwaysOffered == r.alwaysOffered);
    if (r.want != Decision::Allow) CHECK_FALSE(v.reason.empty());
  }
  auto v = decideSchedule(gonzo, facts(Mode::Auto, true), req(T::ThisConversation));
  CHECK(v.reason.find("water the plants") != std::string::npos);  // the owner sees the task
}
