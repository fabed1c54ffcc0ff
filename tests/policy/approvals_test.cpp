// Approvals (layer 4 and "Modes"): decideToolCall and its parts.
#include "broker/policy/approval_rules.h"

#include "tests/policy/helpers.h"

using namespace policy_test;
using pine::policy::AlwaysAnswer;
using pine::policy::approvePatternMatches;
using pine::policy::callSubject;
using pine::policy::decideToolCall;
using pine::policy::effectiveMode;
using pine::policy::SessionFacts;
using nlohmann::json;

namespace {

const std::vector<std::string> kAll = pine::config::knownTools();

// main: every tool, a calendar server, a read-only docs server, a mail server that asks when tainted.
config::Home approvalsHome() {
  auto m = agent("main", kAll);
  m.delegateTo = {"*"};
  auto cal = server("calendar");
  cal.url = "https://cal.example.com/mcp";
  auto docs = server("docs");
  docs.readOnly = true;
  auto mail = server("mail");
  mail.approve = pine::config::McpApprove::Tainted;
  auto vault = server("vault");
  vault.approve = pine::config::McpApprove::Always;
  m.mcpServers = {{"calendar", cal}, {"docs", docs}, {"mail", mail}, {"vault", vault}};
  m.approve = {"bash:*git push*", "send:house", "mcp__calendar__delete_*", "grep"};
  auto scout = agent("scout", {"read", "grep"});
  auto web = server("web");
  web.bundled = "web";
  scout.mcpServers["web"] = web;
  auto netty = agent("netty", {"bash"});
  netty.sandbox.network = Network::All;
  auto loose = agent("loose", {"bash"});
  loose.sandbox.enabled = false;
  auto gonzo = agent("gonzo", {"read", "bash"});
  return home({m, scout, netty, loose, gonzo});
}

SessionFacts clean(Mode mode = Mode::Auto) {
  SessionFacts f;
  f.configuredMode = mode;
  f.withOwner = true;
  return f;
}

SessionFacts tainted(Mode mode = Mode::Auto) {
  SessionFacts f = clean(mode);
  f.tainted = true;
  f.taintReason = "web page";
  return f;
}

struct Row {
  const char* name;
  SessionFacts facts;
  pine::policy::ToolCall call;
  Decision want;
  bool alwaysOffered = false;
  const char* reasonHas = "";
};

void runRows(const config::Home& h, const std::string& agentId, const std::vector<Row>& rows) {
  for (const auto& r : rows) {
    CAPTURE(r.name);
    auto v = decideToolCall(h, h.agents.at(agentId), r.facts, r.call);
    CAPTURE(v.reason);
    CHECK(std::string(decisionName(v.decision)) == decisionName(r.want));
    if (r.want == Decision::Ask) CHECK(v.alwaysOffered == r.alwaysOffered);
    if (v.alwaysOffered) CHECK_FALSE(v.alwaysScope.empty());
    CHECK(v.reason.find(r.reasonHas) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("approvals: callSubject, alwaysScope") {
  CHECK(callSubject(call("bash", {{"command", "git push"}})) == "git push");
  CHECK(callSubject(call("send", {{"to", "house"}})) == "house");
  CHECK(callSubject(call("publish_event", {{"topic", "house/lamp"}})) == "house/lamp");
  CHECK(callSubject(call("delegate", {{"agent", "scout"}})) == "scout");
  CHECK(callSubject(call("write", {{"path", "x"}})) == "");
  CHECK(callSubject(call("bash", json::array({"git push"}))) == "");
  CHECK(callSubject(call("bash", {{"command", json::array({"git", "push"})}})) == R"(["git","push"])");
  CHECK(pine::policy::alwaysScope(call("bash")) == "tool:bash");
  CHECK(pine::policy::alwaysScope(call("mcp__calendar__list", {}, "calendar")) == "mcp:calendar");
  CHECK(pine::policy::alwaysScope(call("mcp__calendar__list")) == "mcp:calendar");
}

TEST_CASE("approvals: approve patterns") {
  struct PRow { const char* pattern; pine::policy::ToolCall call; bool match; };
  const PRow rows[] = {
      {"bash:*git push*", call("bash", {{"command", "cd x && git push origin"}}), true},
      {"bash:*git push*", call("bash", {{"command", "git pull"}}), false},
      {"bash:*", call("bash", {{"command", "ls"}}), true},
      {"bash", call("bash", {{"command", "ls"}}), true},
      {"bash", call("bash_x"), false},
      {"send:house", call("send", {{"to", "house"}}), true},
      {"send:house", call("send", {{"to", "house2"}}), false},
      {"send:house*", call("send", {{"to", "my-house"}}), false},  // '*' does not reach over a missing prefix
      {"mcp__calendar__delete_*", call("mcp__calendar__delete_event", {}, "calendar"), true},
      {"mcp__calendar__delete_*", call("delete_event", {}, "calendar"), true},  // bare name + server
      {"mcp__calendar__delete_*", call("mcp__calendar__list", {}, "calendar"), false},
      {"mcp__calendar__delete_*", call("mcp__calendar__x_delete_y", {}, "calendar"), false},
      {"mcp__*", call("mcp__docs__search", {}, "docs"), true},
      {"publish_event:house/*", call("publish_event", {{"topic", "house/a/b"}}), true},
      {"publish_event:house/*", call("publish_event", {{"topic", "garden/house/x"}}), false},
      {"*:*", call("read"), true},
  };
  for (const auto& r : rows) {
    CAPTURE(r.pattern);
    CAPTURE(r.call.tool);
    CHECK(approvePatternMatches(r.pattern, r.call) == r.match);
  }
  // Linear time: a pattern that backtracks badly in a naive matcher stays quick.
  std::string evil(20000, 'a');
  CHECK_FALSE(approvePatternMatches("bash:*a*a*a*a*a*a*a*a*a*a*a*a*b", call("bash", {{"command", evil}})));
}

TEST_CASE("approvals: effective mode") {
  bool paused = true;
  CHECK(effectiveMode(clean(Mode::Auto), &paused) == Mode::Auto);
  CHECK_FALSE(paused);
  CHECK(effectiveMode(clean(Mode::Manual)) == Mode::Manual);
  CHECK(effectiveMode(clean(Mode::Bypass), &paused) == Mode::Bypass);
  CHECK_FALSE(paused);
  auto over = clean(Mode::Auto);
  over.modeOverride = Mode::Bypass;
  CHECK(effectiveMode(over) == Mode::Bypass);
  // Bypass pauses in a tainted session...
  CHECK(effectiveMode(tainted(Mode::Bypass), &paused) == Mode::Auto);
  CHECK(paused);
  // ...unless the owner said so, always or for this conversation.
  auto always = tainted(Mode::Bypass);
  always.bypassWhenTainted = true;
  CHECK(effectiveMode(always, &paused) == Mode::Bypass);
  CHECK_FALSE(paused);
  auto anyway = tainted(Mode::Bypass);
  anyway.bypassAnyway = true;
  CHECK(effectiveMode(anyway) == Mode::Bypass);
  // Untrusted runs are auto whatever the agent's mode.
  for (Mode m : {Mode::Manual, Mode::Bypass}) {
    auto u = clean(m);
    u.untrustedRun = true;
    u.bypassWhenTainted = true;
    CHECK(effectiveMode(u, &paused) == Mode::Auto);
    CHECK_FALSE(paused);
  }
}

TEST_CASE("approvals: auto mode, clean and tainted") {
  auto h = approvalsHome();
  auto withNet = tainted();
  withNet.shellNetwork = Network::All;
  auto cleanNet = clean();
  cleanNet.shellNetwork = Network::All;
  auto grantedTainted = withNet;
  grantedTainted.networkGrantedWhileTainted = true;
  runRows(h, "main", {
      {"clean: bash runs", clean(), call("bash", {{"command", "make"}}), Decision::Allow},
      {"clean: send runs", clean(), call("send", {{"to", "me"}}), Decision::Allow},
      {"clean: publish runs", clean(), call("publish_event", {{"topic", "house/x"}}), Decision::Allow},
      {"clean: shell with network runs", cleanNet, call("bash", {{"command", "curl x"}}), Decision::Allow},
      {"tainted: read never waits", tainted(), call("read", {{"path", "x"}}), Decision::Allow},
      {"tainted: state_get never waits", tainted(), call("state_get"), Decision::Allow},
      {"tainted: read-only MCP tool (server says)", tainted(),
       [] { auto c = call("mcp__mail__list", {}, "mail"); c.readOnly = true; return c; }(), Decision::Allow},
      {"tainted: read-only MCP server (config)", tainted(), call("mcp__docs__search", {}, "docs"), Decision::Allow},
      {"tainted: write in the workspace", tainted(), call("write", {{"path", "notes.md"}}), Decision::Allow},
      {"tainted: bash without network", tainted(), call("bash", {{"command", "make"}}), Decision::Allow},
      {"tainted: publish_event asks", tainted(), call("publish_event", {{"topic", "house/x"}}), Decision::Ask, true,
       "the conversation has read outside content (web page)"},
      {"tainted: send asks", tainted(), call("send", {{"to", "me"}}), Decision::Ask, true, "send"},
      {"tainted: bash with network asks", withNet, call("bash", {{"command", "curl x"}}), Decision::Ask, true,
       "network"},
      {"tainted: network granted while tainted counts as always", grantedTainted,
       call("bash", {{"command", "curl x"}}), Decision::Allow},
      {"tainted: MCP approve tainted asks", tainted(), call("mcp__mail__send", {}, "mail"), Decision::Ask, true,
       "approve: tainted"},
      {"clean: MCP approve tainted runs", clean(), call("mcp__mail__send", {}, "mail"), Decision::Allow},
      {"tainted: plain MCP tool runs", tainted(), call("mcp__calendar__list", {}, "calendar"), Decision::Allow},
      {"tainted: delegate to a web agent asks", tainted(), call("delegate", {{"agent", "scout"}}), Decision::Ask, true,
       "'scout' can reach the internet"},
      {"tainted: delegate to a network agent asks", tainted(), call("delegate", {{"agent", "netty"}}), Decision::Ask,
       true},
      {"tainted: delegate to an unsandboxed shell asks", tainted(), call("delegate", {{"agent", "loose"}}),
       Decision::Ask, true},
      {"tainted: delegate to an offline agent runs", tainted(), call("delegate", {{"agent", "gonzo"}}),
       Decision::Allow},
      {"clean: delegate to a web agent runs", clean(), call("delegate", {{"agent", "scout"}}), Decision::Allow},
  });
}

TEST_CASE("approvals: approveWhenTainted is the agent's list; send asks anyway") {
  auto h = approvalsHome();
  auto& m = h.agents["main"];
  m.approveWhenTainted = {"write", "mcp__calendar__*"};
  runRows(h, "main", {
      {"listed write asks", tainted(), call("write", {{"path", "x"}}), Decision::Ask, true, "approveWhenTainted"},
      {"listed MCP glob asks", tainted(), call("mcp__calendar__add", {}, "calendar"), Decision::Ask, true},
      {"publish_event no longer listed", tainted(), call("publish_event", {{"topic", "house/x"}}), Decision::Allow},
      {"send asks without the list (layer 9)", tainted(), call("send", {{"to", "me"}}), Decision::Ask, true},
      {"clean: listed write runs", clean(), call("write", {{"path", "x"}}), Decision::Allow},
  });
}

TEST_CASE("approvals: the approve list asks every time in manual and auto, never in bypass") {
  auto h = approvalsHome();
  for (Mode mode : {Mode::Auto, Mode::Manual}) {
    CAPTURE(pine::config::enumName(mode));
    runRows(h, "main", {
        {"git push asks, no always", clean(mode), call("bash", {{"command", "git push origin main"}}), Decision::Ask,
         false, "agent.yaml approve lists 'bash:*git push*'"},
        {"tainted too", tainted(mode), call("bash", {{"command", "git push"}}), Decision::Ask, false},
        {"a listed read-only tool asks", clean(mode), call("grep", {{"pattern", "x"}}), Decision::Ask, false},
        {"send:house asks", clean(mode), call("send", {{"to", "house"}}), Decision::Ask, false},
        {"MCP glob asks", clean(mode), call("mcp__calendar__delete_event", {}, "calendar"), Decision::Ask, false},
        {"approve: always asks, reading included", clean(mode),
         [] { auto c = call("mcp__vault__get", {}, "vault"); c.readOnly = true; return c; }(), Decision::Ask, false,
         "approve: always"},
    });
  }
  // An always answer does not cover what the approve list names.
  auto withAlways = clean();
  withAlways.always = {AlwaysAnswer{"tool:bash", false}};
  runRows(h, "main", {
      {"approve list beats always", withAlways, call("bash", {{"command", "git push"}}), Decision::Ask, false},
      {"git pull runs", clean(), call("bash", {{"command", "git pull"}}), Decision::Allow},
  });
  auto bypass = clean(Mode::Bypass);
  runRows(h, "main", {
      {"bypass skips the approve list", bypass, call("bash", {{"command", "git push"}}), Decision::Allow, false,
       "bypass"},
      {"bypass skips approve: always", bypass, call("mcp__vault__get", {}, "vault"), Decision::Allow},
  });
}

TEST_CASE("approvals: manual mode asks for every change unless always covers it") {
  auto h = approvalsHome();
  auto man = clean(Mode::Manual);
  auto manAlways = man;
  manAlways.always = {AlwaysAnswer{"tool:write", false}, AlwaysAnswer{"mcp:calendar", false}};
  runRows(h, "main", {
      {"read is free", man, call("read", {{"path", "x"}}), Decision::Allow},
      {"ls is free", man, call("ls"), Decision::Allow},
      {"read-only MCP is free", man, call("mcp__docs__search", {}, "docs"), Decision::Allow},
      {"write asks", man, call("write", {{"path", "x"}}), Decision::Ask, true, "manual mode"},
      {"bash asks", man, call("bash", {{"command", "make"}}), Decision::Ask, true},
      {"state_set asks", man, call("state_set"), Decision::Ask, true},
      {"MCP asks", man, call("mcp__calendar__add", {}, "calendar"), Decision::Ask, true},
      {"always for write covers write", manAlways, call("write", {{"path", "x"}}), Decision::Allow, false, "always"},
      {"always for the server covers its tools", manAlways, call("mcp__calendar__add", {}, "calendar"),
       Decision::Allow},
      {"always for write does not cover edit", manAlways, call("edit", {{"path", "x"}}), Decision::Ask, true},
  });
  auto v = decideToolCall(h, h.agents.at("main"), man, call("mcp__calendar__add", {}, "calendar"));
  CHECK(v.alwaysScope == "mcp:calendar");
}

TEST_CASE("approvals: an always answer given while clean does not count once tainted") {
  auto h = approvalsHome();
  auto f = tainted();
  f.always = {AlwaysAnswer{"tool:send", false}};
  runRows(h, "main", {{"clean yes, now tainted: asked again", f, call("send", {{"to", "me"}}), Decision::Ask, true}});
  f.always = {AlwaysAnswer{"tool:send", true}};
  runRows(h, "main", {{"yes given while tainted holds", f, call("send", {{"to", "me"}}), Decision::Allow}});
  auto c = clean();
  c.always = {AlwaysAnswer{"tool:send", true}};
  auto man = clean(Mode::Manual);
  man.always = {AlwaysAnswer{"tool:write", false}};
  auto manTainted = man;
  manTainted.tainted = true;
  runRows(h, "main", {
      {"manual, clean yes, still clean", man, call("write", {{"path", "x"}}), Decision::Allow},
      {"manual, clean yes, now tainted", manTainted, call("write", {{"path", "x"}}), Decision::Ask, true},
  });
}

TEST_CASE("approvals: bypass, paused and not") {
  auto h = approvalsHome();
  auto by = tainted(Mode::Bypass);
  auto v = decideToolCall(h, h.agents.at("main"), by, call("send", {{"to", "me"}}));
  CHECK(v.decision == Decision::Ask);
  CHECK(v.bypassPaused);
  by.bypassAnyway = true;
  v = decideToolCall(h, h.agents.at("main"), by, call("send", {{"to", "me"}}));
  CHECK(v.decision == Decision::Allow);
  CHECK_FALSE(v.bypassPaused);
  auto cleanBy = clean(Mode::Bypass);
  cleanBy.shellNetwork = Network::All;
  runRows(h, "main", {
      {"clean bypass: everything", cleanBy, call("bash", {{"command", "curl x | sh"}}), Decision::Allow},
      {"tainted bypassWhenTainted", [] { auto f = tainted(Mode::Bypass); f.bypassWhenTainted = true; return f; }(),
       call("publish_event", {{"topic", "house/x"}}), Decision::Allow},
  });
}

TEST_CASE("approvals: an untrusted run in a bypass agent stays auto, with its reduced tools") {
  auto h = approvalsHome();
  auto& m = h.agents["main"];
  m.untrusted.publishEvent = true;
  auto u = clean(Mode::Bypass);
  u.untrustedRun = true;
  u.bypassWhenTainted = true;
  runRows(h, "main", {
      {"read works", u, call("read", {{"path", "x"}}), Decision::Allow},
      {"widened publish asks (tainted from the start)", u, call("publish_event", {{"topic", "house/x"}}),
       Decision::Ask, true, "started by outside content"},
      {"bash is not there", u, call("bash", {{"command", "ls"}}), Decision::Refuse, false,
       "not available to a run started by outside content"},
      {"send is not there", u, call("send", {{"to", "me"}}), Decision::Refuse},
      {"MCP is not there", u, call("mcp__calendar__list", {}, "calendar"), Decision::Refuse},
      {"request_access is not there", u, call("request_access"), Decision::Refuse},
  });
  auto v = decideToolCall(h, m, u, call("publish_event", {{"topic", "house/x"}}));
  CHECK_FALSE(v.bypassPaused);
}

TEST_CASE("approvals: tools the run does not have, and forged MCP names") {
  auto h = approvalsHome();
  runRows(h, "gonzo", {
      {"gonzo has bash", clean(), call("bash", {{"command", "ls"}}), Decision::Allow},
      {"gonzo has no send", clean(Mode::Bypass), call("send", {{"to", "me"}}), Decision::Refuse, false,
       "has no tool 'send'"},
      {"gonzo has no MCP server", clean(), call("mcp__calendar__list", {}, "calendar"), Decision::Refuse, false,
       "no MCP server"},
  });
  runRows(h, "main", {
      {"name of another server", clean(), [] { auto c = call("mcp__calendar__delete", {}, "docs"); c.readOnly = true;
         return c; }(), Decision::Refuse, false, "does not belong"},
      {"readOnly claim on a built-in tool is ignored", clean(Mode::Manual),
       [] { auto c = call("bash", {{"command", "rm x"}}); c.readOnly = true; return c; }(), Decision::Ask, true},
  });
}

TEST_CASE("approvals: downloads") {
  auto h = approvalsHome();
  auto& g = h.agents["gonzo"];
  g.tools = {"download", "read"};
  auto cal = server("calendar");
  cal.url = "https://cal.example.com/mcp";
  g.mcpServers["calendar"] = cal;
  auto& s = h.agents["scout"];
  s.tools.push_back("download");
  auto net = clean();
  net.shellNetwork = Network::All;
  auto netTainted = tainted();
  netTainted.shellNetwork = Network::All;
  auto netGranted = netTainted;
  netGranted.networkGrantedWhileTainted = true;
  runRows(h, "gonzo", {
      {"MCP origin, tainted: no question", tainted(), call("download", {{"url", "https://cal.example.com/f.ics"}}),
       Decision::Allow},
      {"MCP origin with default port", clean(), call("download", {{"url", "https://CAL.example.com:443/x"}}),
       Decision::Allow},
      {"look-alike with user info", clean(), call("download", {{"url", "https://cal.example.com@evil.example/x"}}),
       Decision::Refuse, false, "plain http(s)"},
      {"look-alike with user info, with network", net,
       call("download", {{"url", "https://cal.example.com@evil.example/x"}}), Decision::Refuse, false, "plain http(s)"},
      {"plain http with network: refused", net, call("download", {{"url", "http://files.example/x"}}),
       Decision::Refuse, false, "only https"},
      {"another scheme", net, call("download", {{"url", "file:///etc/passwd"}}), Decision::Refuse},
      {"other port", clean(), call("download", {{"url", "https://cal.example.com:8443/x"}}), Decision::Refuse},
      {"elsewhere without network: refused", clean(), call("download", {{"url", "https://files.example/x"}}),
       Decision::Refuse, false, "request_access"},
      {"elsewhere with network, clean", net, call("download", {{"url", "https://files.example/x"}}), Decision::Allow},
      {"elsewhere with network, tainted: asks", netTainted, call("download", {{"url", "https://files.example/x"}}),
       Decision::Ask, true, "network access"},
      {"network granted while tainted", netGranted, call("download", {{"url", "https://files.example/x"}}),
       Decision::Allow},
      {"no url", clean(), call("download", {{"uri", "x"}}), Decision::Refuse, false, "'url'"},
  });
  runRows(h, "scout", {
      {"web agent, tainted: no question", tainted(), call("download", {{"url", "https://any.example/x"}}),
       Decision::Allow},
      {"web agent, plain http: refused", clean(), call("download", {{"url", "http://any.example/x"}}),
       Decision::Refuse, false, "only https"},
  });
  // The web server's host lists apply while the conversation has no network of its own; allowPrivate
  // lets plain http through.
  auto& web = h.agents["scout"].mcpServers["web"];
  web.allowHosts = {"*.docs.example", "Files.Example"};
  web.denyHosts = {"secret.docs.example"};
  web.allowPrivate = true;
  runRows(h, "scout", {
      {"allowed host", clean(), call("download", {{"url", "https://files.example/x"}}), Decision::Allow},
      {"allowed by wildcard", clean(), call("download", {{"url", "https://a.docs.example/x"}}), Decision::Allow},
      {"the wildcard is not the bare domain", clean(), call("download", {{"url", "https://docs.example/x"}}),
       Decision::Refuse, false, "allowHosts"},
      {"denied host", clean(), call("download", {{"url", "https://secret.docs.example/x"}}), Decision::Refuse, false,
       "denyHosts"},
      {"other host", clean(), call("download", {{"url", "https://evil.example/x"}}), Decision::Refuse, false,
       "allowHosts"},
      {"allowPrivate: plain http", clean(), call("download", {{"url", "http://files.example/x"}}), Decision::Allow},
      {"with network of its own, the lists do not apply", net, call("download", {{"url", "https://evil.example/x"}}),
       Decision::Allow},
  });
}

TEST_CASE("approvals: setup tools in decideToolCall keep their every-mode rules") {
  auto h = approvalsHome();
  auto by = clean(Mode::Bypass);
  runRows(h, "main", {
      {"create_agent asks in bypass", by, call("create_agent"), Decision::Ask, false},
      {"add_mcp_server asks in bypass", by, call("add_mcp_server"), Decision::Ask, false},
      {"add_mcp_server names the server and its address", by,
       call("add_mcp_server", {{"name", "wiki"}, {"url", "https://mcp.example/wiki"}}), Decision::Ask, false,
       "the tools of the MCP server 'wiki' at https://mcp.example/wiki; what it answers is outside content"},
      {"add_mcp_server says when the address is local", by,
       call("add_mcp_server", {{"name", "nas"}, {"url", "http://192.168.1.9:8080/mcp"}}), Decision::Ask, false,
       "LOCAL NETWORK"},
      {"add_mcp_server asks, not refuses, in a tainted conversation, and says so", tainted(),
       call("add_mcp_server", {{"name", "wiki"}, {"url", "https://mcp.example/wiki"}}), Decision::Ask, false,
       "note: the conversation has read outside content"},
      {"request_access asks", clean(), call("request_access"), Decision::Ask, false},
      {"add_source_type refused when tainted", tainted(), call("add_source_type"), Decision::Refuse},
      {"add_source_type asks when clean", by, call("add_source_type"), Decision::Ask, false},
      {"subscribe asks when tainted", tainted(), call("subscribe"), Decision::Ask, true},
      {"subscribe runs when clean", clean(), call("subscribe"), Decision::Allow},
      {"schedules: listing only reads", clean(), call("schedules"), Decision::Allow},
      {"schedules: listing only reads, in manual mode too", clean(Mode::Manual), call("schedules", {{"action", "list"}}),
       Decision::Allow},
      {"schedules: creating one asks", clean(), call("schedules", {{"action", "create"}}), Decision::Ask, false},
      {"schedules: an unknown action is no listing", clean(), call("schedules", {{"action", "drop"}}), Decision::Ask,
       false},
  });
  auto h2 = approvalsHome();
  h2.agents["gonzo"].tools = kAll;
  runRows(h2, "gonzo", {
      {"create_agent is main's", clean(), call("create_agent"), Decision::Refuse},
      {"add_source_type is main's", clean(), call("add_source_type"), Decision::Refuse},
  });
}

TEST_CASE("approvals: the reason says where the mode came from: pinectl mode, agent.yaml, or the default") {
  auto h = approvalsHome();
  auto agent = h.agents.at("main");
  auto man = clean(Mode::Manual);
  auto write = call("write", {{"path", "x"}});
  agent.mode.reset();
  auto v = decideToolCall(h, agent, man, write);
  CHECK(v.decision == Decision::Ask);
  CHECK_MESSAGE(v.reason.find("manual mode (the default: defaults.mode in pine.yaml, auto when unset)") != std::string::npos,
                v.reason);
  agent.mode = Mode::Manual;
  v = decideToolCall(h, agent, man, write);
  CHECK_MESSAGE(v.reason.find("manual mode (agent.yaml mode)") != std::string::npos, v.reason);
  man.modeOverride = Mode::Manual;
  v = decideToolCall(h, agent, man, write);
  CHECK_MESSAGE(v.reason.find("manual mode (set with pinectl mode until pine restarts)") != std::string::npos, v.reason);
  // Auto, and a paused bypass that behaves as auto, say so too.
  agent.mode.reset();
  v = decideToolCall(h, agent, clean(Mode::Auto), write);
  CHECK(v.decision == Decision::Allow);
  CHECK(v.reason == "auto mode (the default: defaults.mode in pine.yaml, auto when unset)");
  auto paused = tainted(Mode::Bypass);
  v = decideToolCall(h, agent, paused, write);
  CHECK(v.bypassPaused);
  CHECK(v.decision == Decision::Allow);
  CHECK(v.reason == "auto mode (bypass is paused: the conversation has read outside content)");
}
