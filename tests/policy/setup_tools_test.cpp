// subscribe, add_skill, add_source, create_agent, request_access.
#include "broker/policy/setup_rules.h"

#include "tests/policy/helpers.h"

using namespace policy_test;
using namespace pine::policy;

namespace {

SessionFacts setupFacts(Mode mode = Mode::Auto, bool taint = false, bool mainConv = true) {
  SessionFacts f;
  f.configuredMode = mode;
  f.tainted = taint;
  f.taintReason = taint ? "web page" : "";
  f.mainConversation = mainConv;
  f.withOwner = true;
  return f;
}

SessionFacts untrusted() {
  SessionFacts f;
  f.untrustedRun = true;
  return f;
}

void check(const char* name, const Verdict& v, Decision want, bool always = false) {
  CAPTURE(name);
  CAPTURE(v.reason);
  CHECK(std::string(decisionName(v.decision)) == decisionName(want));
  CHECK(v.alwaysOffered == always);
  if (want != Decision::Allow) CHECK_FALSE(v.reason.empty());
}

}  // namespace

TEST_CASE("setup: subscribe") {
  check("clean auto", decideSubscribe(setupFacts()), Decision::Allow);
  check("reduced run has no tool", decideSubscribe(untrusted()), Decision::Refuse);
  check("tainted asks", decideSubscribe(setupFacts(Mode::Auto, true)), Decision::Ask, true);
  check("manual asks", decideSubscribe(setupFacts(Mode::Manual)), Decision::Ask, true);
  check("bypass clean", decideSubscribe(setupFacts(Mode::Bypass)), Decision::Allow);
  check("bypass tainted is paused: asks", decideSubscribe(setupFacts(Mode::Bypass, true)), Decision::Ask, true);
  auto f = setupFacts(Mode::Auto, true);
  f.always = {AlwaysAnswer{"tool:subscribe", true}};
  check("always given while tainted", decideSubscribe(f), Decision::Allow);
  // Not a conversation with the owner (a schedule's run, another agent's delegation): refused in
  // every mode, bypass included (before: allowed without a word).
  for (Mode m : {Mode::Auto, Mode::Manual, Mode::Bypass}) {
    auto d = setupFacts(m);
    d.withOwner = false;
    check("not with the owner", decideSubscribe(d), Decision::Refuse);
  }
}

TEST_CASE("setup: what a subscription may name, for the owner's command and the agent's tool alike") {
  pine::config::Source hook;
  hook.name = "hook0";
  hook.type = "webhook";
  CHECK_FALSE(subscriptionProblem(hook, "main", ""));
  CHECK_FALSE(subscriptionProblem(hook, "main", "a/+/b"));
  CHECK_FALSE(subscriptionProblem(hook, "main", "a/#"));
  CHECK(subscriptionProblem(hook, "main", "a/#/b"));
  CHECK(subscriptionProblem(hook, "main", "a//b"));
  hook.agent = "house";
  CHECK(subscriptionProblem(hook, "main", "")->find("belongs to agent house") != std::string::npos);
  CHECK_FALSE(subscriptionProblem(hook, "house", ""));
  pine::config::Source tg;
  tg.name = "tg";
  tg.type = "telegram";
  CHECK(subscriptionProblem(tg, "main", "")->find("owner channel") != std::string::npos);
  // A subscription made earlier, under today's sources: gone, given away, or delivered.
  std::vector<pine::config::Source> now = {hook, tg};
  CHECK(heldSubscriptionReason(now, "gone", "main") == "no source 'gone' in pine.yaml");
  CHECK(heldSubscriptionReason(now, "hook0", "main")->find("belongs to agent house") != std::string::npos);
  CHECK_FALSE(heldSubscriptionReason(now, "hook0", "house"));
}

TEST_CASE("setup: add_skill") {
  auto main = agent("main");
  auto gonzo = agent("gonzo");
  AddSkillRequest own{"fmt", false};
  AddSkillRequest all{"fmt", true};
  check("own skill from main conversation", decideAddSkill(gonzo, setupFacts(), own), Decision::Allow);
  check("reduced run", decideAddSkill(gonzo, untrusted(), own), Decision::Refuse);
  for (Mode m : {Mode::Auto, Mode::Manual, Mode::Bypass}) {
    auto f = setupFacts(m, true);
    f.bypassAnyway = true;
    f.bypassWhenTainted = true;
    check("tainted refuses in every mode, without asking", decideAddSkill(main, f, own), Decision::Refuse);
  }
  check("for all agents: not gonzo", decideAddSkill(gonzo, setupFacts(), all), Decision::Refuse);
  check("for all agents: main, asked", decideAddSkill(main, setupFacts(), all), Decision::Ask);
  check("for all agents: main, asked in bypass", decideAddSkill(main, setupFacts(Mode::Bypass), all), Decision::Ask);
  check("side conversation asks", decideAddSkill(gonzo, setupFacts(Mode::Auto, false, false), own), Decision::Ask);
  check("manual asks", decideAddSkill(gonzo, setupFacts(Mode::Manual), own), Decision::Ask);
  check("bypass from a side conversation", decideAddSkill(gonzo, setupFacts(Mode::Bypass, false, false), own),
        Decision::Allow);
}

TEST_CASE("setup: add_source") {
  auto main = agent("main");
  auto gonzo = agent("gonzo");
  AddSourceRequest inWs{"notes", true, false, true, false, ""};
  check("folder in its workspace goes through", decideAddSource(gonzo, setupFacts(), inWs), Decision::Allow);
  check("...not when tainted", decideAddSource(gonzo, setupFacts(Mode::Auto, true), inWs), Decision::Ask);
  check("...not in manual", decideAddSource(gonzo, setupFacts(Mode::Manual), inWs), Decision::Ask);
  auto trusted = inWs;
  trusted.trustOwner = true;
  check("...not when it asks to be trusted", decideAddSource(gonzo, setupFacts(), trusted), Decision::Ask);
  AddSourceRequest outside{"home", true, false, false, false, ""};
  check("something new asks", decideAddSource(gonzo, setupFacts(), outside), Decision::Ask);
  check("something new asks in bypass", decideAddSource(gonzo, setupFacts(Mode::Bypass), outside), Decision::Ask);
  auto noOwner = inWs;
  noOwner.withOwner = false;
  check("only with the owner", decideAddSource(gonzo, setupFacts(), noOwner), Decision::Refuse);
  check("reduced run", decideAddSource(gonzo, untrusted(), inWs), Decision::Refuse);
  AddSourceRequest forAll{"bus", true, true, false, false, ""};
  check("for all agents: not gonzo", decideAddSource(gonzo, setupFacts(), forAll), Decision::Refuse);
  check("for all agents: main asked", decideAddSource(main, setupFacts(), forAll), Decision::Ask);
  auto v = decideAddSource(gonzo, setupFacts(Mode::Auto, true), outside);
  CHECK(v.reason.find("web page") != std::string::npos);
  // A folder outside the workspace: the owner's yes in every mode, with the path in the question.
  AddSourceRequest folder{"scans", true, false, false, false, "/srv/scans"};
  for (auto mode : {Mode::Auto, Mode::Manual, Mode::Bypass}) {
    auto f = decideAddSource(gonzo, setupFacts(mode), folder);
    CHECK(f.decision == Decision::Ask);
    CHECK(f.reason.find("/srv/scans") != std::string::npos);
  }
  auto inWsNamed = inWs;
  inWsNamed.folder = "/home/pine/agents/gonzo/workspace/notes";
  check("a folder in its workspace, named, still goes through", decideAddSource(gonzo, setupFacts(), inWsNamed),
        Decision::Allow);
}

TEST_CASE("setup: add_source of a webhook asks in every mode; an open one says it takes anyone") {
  auto gonzo = agent("gonzo");
  AddSourceRequest hook{"gh", true, false, false, false, ""};
  hook.webhook = "/hooks/gh";
  // Even a webhook "in the workspace" (nothing is) is asked: it opens a way in.
  hook.folderInsideWorkspace = true;
  for (auto mode : {Mode::Auto, Mode::Bypass, Mode::Manual}) {
    auto v = decideAddSource(gonzo, setupFacts(mode), hook);
    check("a webhook asks", v, Decision::Ask);
    CHECK(v.reason.find("it opens the webhook /hooks/gh on pine's control port: whoever holds its secret") !=
          std::string::npos);
    CHECK(v.reason.find("WITHOUT A SECRET") == std::string::npos);
  }
  auto open = hook;
  open.webhookOpen = true;
  auto v = decideAddSource(gonzo, setupFacts(Mode::Bypass), open);
  check("an open webhook asks", v, Decision::Ask);
  CHECK(v.reason.find("to ANYONE who can reach pine's control port, WITHOUT A SECRET (open: true)") != std::string::npos);
  auto noOwner = hook;
  noOwner.withOwner = false;
  check("a webhook only with the owner", decideAddSource(gonzo, setupFacts(), noOwner), Decision::Refuse);
  check("a webhook: never from a reduced run", decideAddSource(gonzo, untrusted(), hook), Decision::Refuse);
}

TEST_CASE("setup: add_source of an http source asks in every mode, naming the address and the local network") {
  auto gonzo = agent("gonzo");
  AddSourceRequest local{"ha", true, false, false, false, "http://192.168.1.20:8123/api", "192.168.1.20 is a private address"};
  for (auto mode : {Mode::Auto, Mode::Bypass, Mode::Manual}) {
    auto v = decideAddSource(gonzo, setupFacts(mode), local);
    check("http asks", v, Decision::Ask);
    CHECK(v.reason.find("http://192.168.1.20:8123/api on your LOCAL NETWORK (192.168.1.20 is a private address)") !=
          std::string::npos);
  }
  AddSourceRequest pub{"feed", true, false, false, false, "https://example.com/feed", ""};
  auto v = decideAddSource(gonzo, setupFacts(Mode::Bypass), pub);
  check("public http asks too", v, Decision::Ask);
  CHECK(v.reason.find("https://example.com/feed, a public address") != std::string::npos);
  CHECK(v.reason.find("LOCAL") == std::string::npos);
}

TEST_CASE("setup: add_source of an ftp source asks in every mode, naming the folder, the local network and the "
          "login's .env entries") {
  auto gonzo = agent("gonzo");
  AddSourceRequest local{"scans"};
  local.ftpUrl = "ftp://192.168.1.30/outbox/";
  local.localReason = "192.168.1.30 is a private address";
  local.ftpLogin = "SCAN_USER and SCAN_PASSWORD";
  for (auto mode : {Mode::Auto, Mode::Bypass, Mode::Manual}) {
    auto v = decideAddSource(gonzo, setupFacts(mode), local);
    check("ftp asks", v, Decision::Ask);
    CHECK(v.reason.find("ftp://192.168.1.30/outbox/ on your LOCAL NETWORK (192.168.1.30 is a private address)") !=
          std::string::npos);
    CHECK(v.reason.find("logging in with your .env entries SCAN_USER and SCAN_PASSWORD") != std::string::npos);
  }
  AddSourceRequest pub = local;
  pub.ftpUrl = "ftps://files.example.com/drop/";
  pub.localReason.clear();
  auto v = decideAddSource(gonzo, setupFacts(Mode::Bypass), pub);
  check("public ftp asks too", v, Decision::Ask);
  CHECK(v.reason.find("ftps://files.example.com/drop/, a public address") != std::string::npos);
  CHECK(v.reason.find("LOCAL") == std::string::npos);
  CHECK(v.reason.find("inbox") == std::string::npos);
  pub.ftpFetch = true;
  CHECK(decideAddSource(gonzo, setupFacts(Mode::Bypass), pub).reason.find(
            "and fetches each new or changed file into the agent's inbox") != std::string::npos);
  // Not a folder in the workspace, whatever the request says: still asked.
  pub.folderInsideWorkspace = true;
  check("an ftp source is never a workspace folder", decideAddSource(gonzo, setupFacts(Mode::Bypass), pub), Decision::Ask);
}

TEST_CASE("setup: add_source of a registered program type asks in every mode, naming the program") {
  auto gonzo = agent("gonzo");
  AddSourceRequest prog{"mail"};
  prog.program = "'imap' (source-types/imap-0123456789ab)";
  for (Mode mode : {Mode::Manual, Mode::Auto, Mode::Bypass}) {
    auto v = decideAddSource(gonzo, setupFacts(mode), prog);
    check("a program asks", v, Decision::Ask);
    CHECK(v.reason.find("it starts your registered source program 'imap' (source-types/imap-0123456789ab) with "
                        "pine's rights, outside any sandbox") != std::string::npos);
  }
  // Claiming to be a folder in the workspace does not make a program go through.
  auto sneaky = prog;
  sneaky.folderInsideWorkspace = true;
  check("a program never goes through as a folder", decideAddSource(gonzo, setupFacts(Mode::Bypass), sneaky),
        Decision::Ask);
  AddSourceRequest mqtt{"house"};
  mqtt.connectsTo = "mqtts://mqtt.lan:8883";
  auto v = decideAddSource(gonzo, setupFacts(Mode::Bypass), mqtt);
  check("mqtt asks", v, Decision::Ask);
  CHECK(v.reason.find("it connects to mqtts://mqtt.lan:8883 as an MQTT client") != std::string::npos);
}

TEST_CASE("setup: add_source of a command asks in every mode, bypass included, and shows the command line") {
  auto gonzo = agent("gonzo");
  AddSourceRequest cmd{"disk"};
  cmd.commandLine = "`df -h /` in the sandbox of agent 'gonzo', every 900 s";
  for (Mode mode : {Mode::Manual, Mode::Auto, Mode::Bypass}) {
    auto v = decideAddSource(gonzo, setupFacts(mode), cmd);
    check("a command asks", v, Decision::Ask);
    CHECK(v.reason.find("it runs the command `df -h /` in the sandbox of agent 'gonzo', every 900 s") != std::string::npos);
  }
  // Even a command that claims to be a folder in the workspace asks.
  auto sneaky = cmd;
  sneaky.folderInsideWorkspace = true;
  check("a command never goes through as a folder", decideAddSource(gonzo, setupFacts(Mode::Bypass), sneaky), Decision::Ask);
  // Legitimate twin: the folder in its workspace still goes through unasked.
  check("folder in its workspace", decideAddSource(gonzo, setupFacts(Mode::Bypass), {"notes", true, false, true, false, ""}),
        Decision::Allow);
  auto noOwner = cmd;
  noOwner.withOwner = false;
  check("a command only with the owner", decideAddSource(gonzo, setupFacts(Mode::Bypass), noOwner), Decision::Refuse);
}

TEST_CASE("setup: create_agent and request_access") {
  auto main = agent("main");
  check("main, asked", decideCreateAgent(main, setupFacts()), Decision::Ask);
  check("main, asked in bypass", decideCreateAgent(main, setupFacts(Mode::Bypass)), Decision::Ask);
  check("not main", decideCreateAgent(agent("gonzo"), setupFacts()), Decision::Refuse);
  check("reduced run", decideCreateAgent(main, untrusted()), Decision::Refuse);
  auto v = decideCreateAgent(main, setupFacts(Mode::Auto, true));
  CHECK(v.reason.find("read outside content") != std::string::npos);
  check("request_access asks", decideRequestAccess(setupFacts()), Decision::Ask);
  check("request_access asks when tainted", decideRequestAccess(setupFacts(Mode::Auto, true)), Decision::Ask);
  check("reduced runs cannot ask for more", decideRequestAccess(untrusted()), Decision::Refuse);
}
