// Which tools a run is given at all.
#include "broker/policy/profile.h"

#include "tests/policy/helpers.h"

using namespace policy_test;
using pine::policy::RunContext;
using pine::policy::toolsForRun;

namespace {
using Set = std::set<std::string>;
const std::vector<std::string> kKnownTools = pine::config::knownTools();
}  // namespace

TEST_CASE("profile: owner runs get the agent's tools, create_agent only for main, MCP servers, subagent") {
  auto h = home({});
  auto m = agent("main", kKnownTools);
  m.mcpServers["web"] = server("web");
  auto owner = toolsForRun(h, m, RunContext{});
  CHECK(owner.count("create_agent"));
  CHECK(owner.count("schedules"));
  CHECK(owner.count("mcp__web"));
  CHECK(owner.count("subagent"));
  auto g = agent("gonzo", kKnownTools);
  CHECK_FALSE(toolsForRun(h, g, RunContext{}).count("create_agent"));
  CHECK(toolsForRun(h, g, RunContext{}).count("add_skill"));
  // Only what it lists.
  auto narrow = agent("narrow", {"read", "bash"});
  CHECK(toolsForRun(h, narrow, RunContext{}) == Set{"read", "bash", "subagent"});
  h.pine.limits.maxSubAgents = 0;
  CHECK(toolsForRun(h, narrow, RunContext{}) == Set{"read", "bash"});
  // A sub-agent starts no sub-agents of its own.
  h.pine.limits.maxSubAgents = 4;
  RunContext sub;
  sub.subagent = true;
  CHECK(toolsForRun(h, narrow, sub) == Set{"read", "bash"});
}

TEST_CASE("profile: untrusted and separate-subscription runs get read grep find ls") {
  auto h = home({});
  auto m = agent("main", kKnownTools);
  m.mcpServers["web"] = server("web");
  RunContext u;
  u.trust = Trust::Untrusted;
  CHECK(toolsForRun(h, m, u) == Set{"read", "grep", "find", "ls"});
  RunContext sep;
  sep.separateSubscription = true;
  CHECK(toolsForRun(h, m, sep) == Set{"read", "grep", "find", "ls"});
  // Never more than an owner run of the agent has.
  auto blind = agent("blind", {"bash", "grep"});
  blind.untrusted.shell = true;
  CHECK(toolsForRun(h, blind, u) == Set{"grep", "bash"});
}

TEST_CASE("profile: untrusted widenings, each only if the agent has the tool") {
  auto h = home({});
  struct Row {
    const char* name;
    void (*widen)(pine::config::UntrustedProfile&);
    Set added;
  };
  const Row rows[] = {
      {"shell", [](auto& p) { p.shell = true; }, {"bash"}},
      {"write", [](auto& p) { p.write = true; }, {"write", "edit"}},
      {"publishEvent", [](auto& p) { p.publishEvent = true; }, {"publish_event"}},
      {"stateWrite", [](auto& p) { p.stateWrite = true; }, {"state_get", "state_set"}},
      {"delegate", [](auto& p) { p.delegate = true; }, {"delegate"}},
      {"subAgents", [](auto& p) { p.subAgents = true; }, {"subagent"}},
      {"mcp", [](auto& p) { p.mcp = true; }, {"mcp__calendar", "mcp__web"}},
  };
  RunContext u;
  u.trust = Trust::Untrusted;
  for (const auto& r : rows) {
    CAPTURE(r.name);
    auto a = agent("x", kKnownTools);
    a.mcpServers["calendar"] = server("calendar");
    a.mcpServers["web"] = server("web");
    r.widen(a.untrusted);
    Set want{"read", "grep", "find", "ls"};
    want.insert(r.added.begin(), r.added.end());
    CHECK(toolsForRun(h, a, u) == want);
    // The same widening on an agent without those tools adds nothing.
    auto bare = agent("y", {"read", "grep", "find", "ls"});
    r.widen(bare.untrusted);
    if (std::string(r.name) == "subAgents") h.pine.limits.maxSubAgents = 0;
    CHECK(toolsForRun(h, bare, u) == Set{"read", "grep", "find", "ls"});
    h.pine.limits.maxSubAgents = 4;
  }
}

TEST_CASE("profile: never for untrusted runs, whatever is widened") {
  auto h = home({});
  auto a = agent("main", kKnownTools);
  a.untrusted = {true, true, true, true, true, true, true, true};
  RunContext u;
  u.trust = Trust::Untrusted;
  auto tools = toolsForRun(h, a, u);
  for (const char* t : {"subscribe", "schedules", "request_access", "add_skill", "add_source", "add_source_type",
                        "add_mcp_server", "create_agent", "download", "send"}) {
    CAPTURE(t);
    CHECK_FALSE(tools.count(t));
    CHECK(toolsForRun(h, a, RunContext{}).count(t));  // the owner run of the same agent has it
  }
}

TEST_CASE("profile: MCP tool names") {
  CHECK(pine::policy::mcpServerOf("mcp__calendar__delete_event") == "calendar");
  CHECK(pine::policy::mcpServerOf("mcp__calendar") == "");
  CHECK(pine::policy::mcpServerOf("mcp____x") == "");
  CHECK(pine::policy::mcpServerOf("bash") == "");
}

TEST_CASE("profile: one answer to which built-in calls only read") {
  using pine::policy::builtinReadsOnly;
  for (const char* t : {"read", "grep", "find", "ls", "state_get"}) CHECK(builtinReadsOnly(t, nlohmann::json::object()));
  CHECK(builtinReadsOnly("schedules", nlohmann::json::object()));
  CHECK(builtinReadsOnly("schedules", {{"action", "list"}}));
  CHECK_FALSE(builtinReadsOnly("schedules", {{"action", "create"}}));
  CHECK_FALSE(builtinReadsOnly("schedules", {{"action", 1}}));
  CHECK_FALSE(builtinReadsOnly("schedules", "not an object"));
  // Every other known tool changes or sends something.
  for (const auto& t : kKnownTools) {
    if (t == "read" || t == "grep" || t == "find" || t == "ls" || t == "state_get" || t == "schedules") continue;
    CAPTURE(t);
    CHECK_FALSE(builtinReadsOnly(t, nlohmann::json::object()));
  }
  CHECK_FALSE(builtinReadsOnly("mcp__web__fetch", nlohmann::json::object()));
}

TEST_CASE("verdict: one that nobody decided refuses") {
  pine::policy::Verdict v;
  CHECK(v.decision == pine::policy::Decision::Refuse);
  CHECK_FALSE(v.reason.empty());
}
