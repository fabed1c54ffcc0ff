// Taint (layer 4): which tool results are outside content, and what a session keeps.
#include "broker/policy/taint.h"

#include "tests/policy/helpers.h"

using namespace policy_test;
using pine::config::TaintPolicy;
using pine::policy::taintAfterRun;
using pine::policy::toolCallMarksTaint;
using pine::policy::toolTaints;

TEST_CASE("taint: which tools taint") {
  auto a = agent("main");
  auto web = server("web");
  web.bundled = "web";
  auto browser = server("b");
  browser.bundled = "browser";
  auto mail = server("mail");
  mail.taints = true;
  auto cal = server("calendar");
  a.mcpServers = {{"web", web}, {"b", browser}, {"mail", mail}, {"calendar", cal}};
  auto h = home({a});
  h.pine.security.taintTools = {"mcp__calendar__read_*", "fetch_*"};
  struct Row { const char* tool; const char* server; bool taints; };
  const Row rows[] = {
      {"mcp__web__fetch", "web", true},
      {"mcp__web__fetch", "", true},  // server derived from the name
      {"mcp__b__click", "b", true},
      {"mcp__mail__list", "mail", true},
      {"mcp__calendar__list", "calendar", false},
      {"mcp__calendar__read_invite", "calendar", true},  // security.taintTools glob
      {"mcp__calendar__unread_x", "calendar", false},    // the glob does not float inside the name
      {"download", "", true},
      {"read", "", false},
      {"bash", "", false},
      {"state_get", "", false},
      {"fetch_page", "", true},
      {"prefetch_page", "", false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.tool);
    CHECK(toolTaints(h, h.agents["main"], r.tool, r.server) == r.taints);
  }
  // A server of another agent does not count for this one.
  auto other = agent("other");
  CHECK_FALSE(toolTaints(h, other, "mcp__web__fetch", "web"));
}

TEST_CASE("taint: taintFromToolCall says why, and nothing under security.taint off") {
  auto a = agent("main");
  auto web = server("web");
  web.bundled = "web";
  a.mcpServers["web"] = web;
  auto h = home({a});
  auto u = pine::policy::taintFromToolCall(h, a, "mcp__web__fetch", "web");
  CHECK(u.tainted);
  CHECK(u.reason.find("web page") != std::string::npos);
  CHECK_FALSE(pine::policy::taintFromToolCall(h, a, "read", "").tainted);
  h.pine.security.taint = TaintPolicy::Off;
  CHECK_FALSE(pine::policy::taintFromToolCall(h, a, "mcp__web__fetch", "web").tainted);
}

TEST_CASE("taint: after a run, by security.taint; <agent>~u always stays tainted") {
  struct Row { TaintPolicy policy; const char* session; bool now; bool after; };
  const Row rows[] = {
      {TaintPolicy::Session, "main", true, true},   {TaintPolicy::Session, "main", false, false},
      {TaintPolicy::Run, "main", true, false},      {TaintPolicy::Off, "main", true, false},
      {TaintPolicy::Session, "main~u", false, true}, {TaintPolicy::Run, "main~u", true, true},
      {TaintPolicy::Off, "main~u", false, true},     {TaintPolicy::Run, "main~ux", true, false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.session);
    CAPTURE(static_cast<int>(r.policy));
    CHECK(taintAfterRun(r.policy, r.session, r.now) == r.after);
  }
  CHECK(toolCallMarksTaint(TaintPolicy::Session));
  CHECK(toolCallMarksTaint(TaintPolicy::Run));
  CHECK_FALSE(toolCallMarksTaint(TaintPolicy::Off));
}
