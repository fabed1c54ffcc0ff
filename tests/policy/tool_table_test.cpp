// The tool table drives the profiles and the approval rules: every row gets a call that must
// pass (allowed or asked) and one that must be refused, in the owner's profile and in the
// reduced profile of runs started by outside content.
#include <map>

#include "broker/policy/profile.h"
#include "common/tool_table.h"
#include "tests/policy/helpers.h"

using namespace policy_test;
using pine::policy::RunContext;
using pine::policy::SessionFacts;
using pine::policy::decideToolCall;
using pine::policy::toolsForRun;
namespace tt = pine::tooltable;

namespace {

// Arguments a legitimate call of each tool would carry.
nlohmann::json legitArgs(const std::string& tool) {
  static const std::map<std::string, nlohmann::json> args = {
      {"read", {{"path", "a.txt"}}},
      {"write", {{"path", "a.txt"}, {"content", "x"}}},
      {"edit", {{"path", "a.txt"}, {"old_text", "x"}, {"new_text", "y"}}},
      {"grep", {{"pattern", "x"}}},
      {"find", {{"pattern", "*.md"}}},
      {"ls", nlohmann::json::object()},
      {"bash", {{"command", "ls"}}},
      {"download", {{"url", "https://example.com/a"}, {"path", "a"}}},
      {"request_access", {{"path", "/srv/data"}, {"access", "read"}, {"reason", "the task needs it"}}},
      {"state_get", {{"key", "k"}}},
      {"state_set", {{"key", "k"}, {"value", {{"v", 1}}}}},
      {"publish_event", {{"topic", "news/x"}}},
      {"send", {{"to", "owner"}, {"text", "hi"}}},
      {"delegate", {{"agent", "helper"}, {"task", "t"}}},
      {"subagent", {{"task", "t"}}},
      {"subscribe", {{"source", "owner"}}},
      {"schedules", {{"action", "list"}}},
      {"add_skill", {{"name", "s"}, {"description", "d"}, {"instructions", "i"}}},
      {"add_source", {{"source", {{"name", "f"}, {"type", "folder"}}}}},
      {"create_agent", {{"id", "x"}, {"description", "d"}, {"instructions", "i"}}},
  };
  auto it = args.find(tool);
  return it == args.end() ? nlohmann::json::object() : it->second;
}

std::vector<std::string> configurableNames() {
  std::vector<std::string> out;
  for (const auto& row : tt::builtinTools())
    if (row.configurable) out.push_back(row.name);
  return out;
}

config::Home tableHome() {
  auto h = home({agent("main", configurableNames()), agent("helper", configurableNames())});
  h.pine.limits.maxSubAgents = 2;
  return h;
}

SessionFacts withNetwork(SessionFacts f) {
  f.shellNetwork = Network::All;  // a download needs a way out; everything else ignores it
  f.withOwner = true;             // the owner's conversation (subscribe needs one)
  return f;
}

}  // namespace

TEST_CASE("tool table: names are unique, every row has a schema, and the configuration's lists come from it") {
  std::set<std::string> names;
  for (const auto& row : tt::builtinTools()) {
    CAPTURE(row.name);
    CHECK(names.insert(row.name).second);
    CHECK(tt::findTool(row.name) == &row);
    CHECK(row.parameters.is_object());
    CHECK(row.parameters["type"] == "object");
    if (row.carriedOut) CHECK(row.description.size() > 20);
    if (row.byDefault) CHECK(row.configurable);
  }
  CHECK(config::knownTools() == configurableNames());
  for (const auto& t : config::defaultTools()) CHECK(tt::findTool(t)->byDefault);
  CHECK(tt::findTool("rm") == nullptr);
}

TEST_CASE("tool table: every row passes in the owner's profile and is refused where the agent lacks it") {
  auto h = tableHome();
  const auto& m = h.agents.at("main");
  auto given = toolsForRun(h, m, RunContext{});
  for (const auto& row : tt::builtinTools()) {
    CAPTURE(row.name);
    CHECK(given.count(row.name) == 1);
    auto v = decideToolCall(h, m, withNetwork({}), call(row.name, legitArgs(row.name)));
    CAPTURE(v.reason);
    CHECK(v.decision != Decision::Refuse);
    // The same agent without the tool (only `read`, no sub-agents): refused, and saying so.
    if (row.name == "read") continue;
    auto bare = tableHome();
    bare.pine.limits.maxSubAgents = 0;
    bare.agents["main"].tools = {"read"};
    auto r = decideToolCall(bare, bare.agents.at("main"), withNetwork({}), call(row.name, legitArgs(row.name)));
    CAPTURE(r.reason);
    CHECK(r.decision == Decision::Refuse);
    CHECK(r.reason.find("has no tool") != std::string::npos);
  }
}

TEST_CASE("tool table: main-only rows are refused to every other agent") {
  auto h = tableHome();
  const auto& helper = h.agents.at("helper");
  auto given = toolsForRun(h, helper, RunContext{});
  for (const auto& row : tt::builtinTools()) {
    if (!row.mainOnly) continue;
    CAPTURE(row.name);
    CHECK(given.count(row.name) == 0);
    CHECK(decideToolCall(h, helper, {}, call(row.name, legitArgs(row.name))).decision == Decision::Refuse);
  }
}

TEST_CASE("tool table: the rows agree with the seed's profiles (an independent list, not read from the table)") {
  std::set<std::string> always, never, reading;
  for (const auto& row : tt::builtinTools()) {
    if (row.untrusted == tt::Untrusted::Always) always.insert(row.name);
    if (row.untrusted == tt::Untrusted::Never) never.insert(row.name);
    if (row.reads == tt::Reads::Always) reading.insert(row.name);
  }
  CHECK(always == std::set<std::string>{"read", "grep", "find", "ls"});
  for (const char* t : {"subscribe", "schedules", "request_access", "add_skill", "add_source", "add_source_type",
                        "add_mcp_server", "create_agent", "download", "send"}) {
    CAPTURE(t);
    CHECK(never.count(t) == 1);
  }
  // Layer 4: tools that only read never wait.
  CHECK(reading == std::set<std::string>{"read", "grep", "find", "ls", "state_get"});
  CHECK(tt::findTool("download")->outside);
  CHECK(tt::findTool("create_agent")->mainOnly);
}

TEST_CASE("tool table: runs started by outside content get the Always rows, widenings give theirs, never the rest") {
  for (bool widened : {false, true}) {
    CAPTURE(widened);
    auto h = tableHome();
    auto& m = h.agents["main"];
    if (widened) {
      m.untrusted.shell = m.untrusted.write = m.untrusted.publishEvent = m.untrusted.stateWrite = true;
      m.untrusted.delegate = m.untrusted.subAgents = true;
    }
    RunContext ctx;
    ctx.trust = Trust::Untrusted;
    auto given = toolsForRun(h, m, ctx);
    SessionFacts facts;
    facts.untrustedRun = true;
    facts.tainted = true;
    for (const auto& row : tt::builtinTools()) {
      CAPTURE(row.name);
      bool should = row.untrusted == tt::Untrusted::Always || (widened && row.untrusted != tt::Untrusted::Never);
      CHECK(given.count(row.name) == (should ? 1u : 0u));
      auto v = decideToolCall(h, m, withNetwork(facts), call(row.name, legitArgs(row.name)));
      CAPTURE(v.reason);
      if (should) CHECK(v.decision != Decision::Refuse);
      else CHECK(v.decision == Decision::Refuse);
    }
  }
}

TEST_CASE("tool table: rows that only read pass in manual mode without asking; the rest wait there") {
  auto h = tableHome();
  const auto& m = h.agents.at("main");
  SessionFacts manual = withNetwork({});
  manual.configuredMode = Mode::Manual;
  for (const auto& row : tt::builtinTools()) {
    CAPTURE(row.name);
    auto v = decideToolCall(h, m, manual, call(row.name, legitArgs(row.name)));
    CAPTURE(v.reason);
    if (tt::readsOnly(row, legitArgs(row.name))) CHECK(v.decision == Decision::Allow);
    else if (row.name != "subscribe") CHECK(v.decision == Decision::Ask);  // subscribe: clean runs need no yes
  }
}
