// Every class of validation error: where it is reported (file:line:column and
// key path), what it says was expected, and the hint.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "config/env_file.h"
#include "config/load.h"
#include "config/schema.h"
#include "config/secrets.h"
#include "helpers.h"

using namespace pine::config;
using pine::config::test::dump;
using pine::config::test::findError;
using pine::config::test::TempHome;

TEST_CASE("unknown key: reported at its position with 'did you mean'") {
  TempHome h;
  h.write("pine.yaml", "defaults:\n  model: demo\nlimits:\n  queuPerAgent: 3\n");
  auto r = h.load();
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.errors.size() == 1);
  const ConfigError& e = r.errors[0];
  CHECK(e.file == h.path("pine.yaml"));
  CHECK(e.line == 4);
  CHECK(e.column == 3);
  CHECK(e.keyPath == "limits.queuPerAgent");
  CHECK(e.hint == "did you mean 'queuePerAgent'?");
  CHECK(e.format() == h.path("pine.yaml") +
                          ":4:3: limits.queuPerAgent: unknown key 'queuPerAgent' (did you mean 'queuePerAgent'?)");
}

TEST_CASE("unknown key: snake_case and case variants are recognised; far-off keys list what is allowed") {
  TempHome h;
  h.write("agents/scout/agent.yaml", "trust_workspace: false\nBudget: {}\nzzzz: 1\n");
  auto r = h.load();
  auto* a = findError(r.errors, "trust_workspace");
  REQUIRE(a);
  CHECK(a->hint == "did you mean 'trustWorkspace'?");
  auto* b = findError(r.errors, "Budget");
  REQUIRE(b);
  CHECK(b->hint == "did you mean 'budget'?");
  auto* c = findError(r.errors, "zzzz");
  REQUIRE(c);
  CHECK(c->hint.empty());  // agent.yaml has more keys than a useful list
  CHECK(c->line == 3);
}

TEST_CASE("unknown key in a typed section names the type") {
  TempHome h;
  h.append("pine.yaml",
           "webhooks:\n  - name: ci\n    topic: ci/deploy\n    secret: CI_SECRET\n    secrte: X\n");
  h.write(".env", "CI_SECRET=abc\n");
  auto r = h.load();
  auto* e = findError(r.errors, "webhooks[0].secrte", "unknown key");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->hint == "did you mean 'secret'?");

  TempHome h2;
  std::string pine = "sources:\n  - name: dev\n    type: mqtt\n    url: mqtt://127.0.0.1\n    topic: a/b\n";
  h2.write("pine.yaml", "defaults: {model: demo}\n" + pine);
  r = h2.load();
  e = findError(r.errors, "sources[0].topic");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->message == "unknown key 'topic' for a mqtt source");
  CHECK(e->hint == "did you mean 'topics'?");
}

TEST_CASE("wrong types say what was expected and what was found") {
  TempHome h;
  h.write("pine.yaml", "defaults: {model: demo}\nhttp:\n  port: \"8080\"\nsecurity:\n  bypassWhenTainted: yes\n"
                       "limits: 5\n");
  h.write("agents/house/agent.yaml", "tools: read\nsandbox:\n  read: /srv/data\n");
  auto r = h.load();
  auto* port = findError(r.errors, "http.port");
  REQUIRE_MESSAGE(port, dump(r.errors));
  CHECK(port->message == "expected an integer from 1 to 65535, got the string '8080'");
  CHECK(port->line == 3);
  CHECK(port->column == 9);
  auto* yes = findError(r.errors, "security.bypassWhenTainted");
  REQUIRE(yes);
  CHECK(yes->message == "expected true or false, got 'yes'");
  auto* limits = findError(r.errors, "limits");
  REQUIRE(limits);
  CHECK(limits->message == "expected a map of keys, got '5'");
  auto* tools = findError(r.errors, "tools");
  REQUIRE(tools);
  CHECK(tools->file == h.path("agents/house/agent.yaml"));
  CHECK(tools->message == "expected a list of strings, got 'read'");
  CHECK(tools->hint == "write a single item as a list: [read]");
  CHECK(findError(r.errors, "sandbox.read", "expected a list"));
}

TEST_CASE("bad enum values list the allowed ones and suggest the nearest") {
  TempHome h;
  h.write("agents/main/agent.yaml", "mode: bypas\nsandbox: {network: internet}\n");
  auto r = h.load();
  auto* mode = findError(r.errors, "mode");
  REQUIRE_MESSAGE(mode, dump(r.errors));
  CHECK(mode->message == "expected manual, auto or bypass, got 'bypas'");
  CHECK(mode->hint == "did you mean 'bypass'?");
  CHECK(mode->line == 1);
  CHECK(mode->column == 7);
  auto* net = findError(r.errors, "sandbox.network");
  REQUIRE(net);
  CHECK(net->message == "expected none, localhost or all, got 'internet'");
}

TEST_CASE("out-of-range numbers name the range") {
  TempHome h;
  h.write("pine.yaml", "defaults: {model: demo}\nlimits:\n  delegationDepth: 99\n  maxSubAgents: -1\n");
  auto r = h.load();
  auto* d = findError(r.errors, "limits.delegationDepth");
  REQUIRE(d);
  CHECK(d->message == "99 is out of range: expected an integer from 0 to 10");
  auto* s = findError(r.errors, "limits.maxSubAgents");
  REQUIRE(s);
  CHECK(s->message == "-1 is out of range: expected an integer from 0 to 20");
  h.write("models.yaml", "providers: {demo: {kind: script, script: providers/demo-replies.yaml}}\n"
                         "models:\n  demo:\n    provider: demo\n    contextWindow: 12\n    pricing: {input: -1, output: 2}\n");
  r = h.load();
  CHECK(findError(r.errors, "models.demo.contextWindow", "out of range"));
  CHECK(findError(r.errors, "models.demo.pricing.input", "-1 is out of range: expected a number from 0 to 100000"));
}

TEST_CASE("dangling references: route to a missing agent, model without provider, missing model") {
  TempHome h;
  h.replace("pine.yaml", "routes:\n", "routes:\n  - source: house-device\n    agent: scuot\n");
  auto r = h.load();
  auto* agent = findError(r.errors, "routes[0].agent");
  REQUIRE_MESSAGE(agent, dump(r.errors));
  CHECK(agent->message == "no agent 'scuot' (there is no agents/scuot/agent.yaml)");
  // The guess, and what exists.
  CHECK_MESSAGE(agent->hint.rfind("did you mean 'scout'? the agents are: ", 0) == 0, agent->hint);
  CHECK(agent->hint.find("main") != std::string::npos);
  auto* source = findError(r.errors, "routes[0].source");
  REQUIRE(source);
  CHECK_MESSAGE(source->hint.rfind("did you mean 'house-devices'? the sources and webhooks are: ", 0) == 0, source->hint);

  TempHome h2;
  h2.append("models.yaml", "  orphan:\n    provider: nowhere\n");
  r = h2.load();
  auto* prov = findError(r.errors, "models.orphan.provider");
  REQUIRE_MESSAGE(prov, dump(r.errors));
  CHECK(prov->message == "no provider 'nowhere' in models.yaml");
  // Nothing near: no guess, only what exists.
  CHECK_MESSAGE(prov->hint.rfind("the providers are: ", 0) == 0, prov->hint);
  CHECK(prov->file == h2.path("models.yaml"));

  TempHome h3;
  h3.write("agents/house/agent.yaml", "model: dmeo\n");
  r = h3.load();
  auto* model = findError(r.errors, "model");
  REQUIRE(model);
  CHECK(model->message == "no model 'dmeo' in models.yaml");
  CHECK_MESSAGE(model->hint.rfind("did you mean 'demo'? the models are: ", 0) == 0, model->hint);
  CHECK(whatExists("x", {}, "models") == "there are no models");
  std::vector<std::string> many;
  for (int i = 0; i < 25; ++i) many.push_back("m" + std::to_string(i));
  CHECK(whatExists("zzz", many, "models").find("m19 and 5 more") != std::string::npos);

  TempHome h4;
  h4.write("pine.yaml", "");  // no defaults.model, and agents name none
  r = h4.load();
  CHECK(findError(r.errors, "model", "agent 'main' has no model"));
  CHECK(findError(r.errors, "model", "agent 'scout' has no model"));
}

TEST_CASE("a secret name that is not in .env is an error; once set it loads, and Home keeps names only") {
  TempHome h;
  h.write("models.yaml", "providers:\n  openai:\n    kind: openai\n    keySecret: OPENAI_KEY\n"
                         "  anthropic:\n    kind: anthropic\n    apiKey: ${secret:ANTHROPIC_KEY}\n"
                         "  demo: {kind: script, script: providers/demo-replies.yaml}\n"
                         "models:\n  demo: {provider: demo}\n  gpt: {provider: openai, id: gpt-4.1}\n");
  auto r = h.load();
  auto* e = findError(r.errors, "providers.openai.keySecret");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->message == "secret 'OPENAI_KEY' is not in .env");
  CHECK(e->hint == "store it with `pinectl secret set OPENAI_KEY`");
  CHECK(e->line == 4);
  CHECK(findError(r.errors, "providers.anthropic.apiKey", "secret 'ANTHROPIC_KEY' is not in .env"));

  h.write(".env", "OPENAI_KEY=not-a-real-value-1\nANTHROPIC_KY=x\n");
  r = h.load();
  auto* near = findError(r.errors, "providers.anthropic.apiKey");
  REQUIRE(near);
  CHECK(near->hint == "did you mean 'ANTHROPIC_KY'? otherwise store it with `pinectl secret set ANTHROPIC_KEY`");

  h.write(".env", "OPENAI_KEY=not-a-real-value-1\nexport ANTHROPIC_KEY='not-a-real-value-2'\n");
  r = h.load();
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  CHECK(r.home->envSecretNames == std::set<std::string>{"ANTHROPIC_KEY", "OPENAI_KEY"});
  CHECK(r.home->models.providers.at("anthropic").keySecret == "ANTHROPIC_KEY");
  CHECK(r.home->models.providers.at("openai").baseUrl == "https://api.openai.com/v1");
}

TEST_CASE("a literal secret in configuration is an error that never repeats the value") {
  const std::string key = "sk-proj-Abcdefghijklmnopqrstuvwx0123456789";
  TempHome h;
  h.write("models.yaml", "providers:\n  openai:\n    kind: openai\n    apiKey: " + key +
                             "\n  other:\n    kind: openai\n    keySecret: " + key +
                             "\n  demo: {kind: script, script: providers/demo-replies.yaml}\nmodels:\n  demo: {provider: demo}\n");
  h.write("agents/main/agent.yaml",
          "mcpServers:\n  gh:\n    command: [github-mcp]\n    env:\n      GITHUB_TOKEN: ghp_abcdefghijklmnopqrstuvwxyz0123\n"
          "  calendar:\n    url: https://cal.example/mcp\n    headers:\n      Authorization: Bearer abc\n");
  auto r = h.load();
  REQUIRE_FALSE(r.ok());
  const std::string all = dump(r.errors);
  CHECK(all.find(key) == std::string::npos);
  CHECK(all.find("ghp_") == std::string::npos);
  auto* api = findError(r.errors, "providers.openai.apiKey");
  REQUIRE_MESSAGE(api, all);
  CHECK(api->message == "this looks like a secret's value; configuration names secrets and never holds them");
  CHECK(api->hint.find("pinectl secret set OPENAI_API_KEY") != std::string::npos);
  CHECK(api->hint == "store it with `pinectl secret set OPENAI_API_KEY` and write ${secret:OPENAI_API_KEY} in its place");
  auto* name = findError(r.errors, "providers.other.keySecret");
  REQUIRE(name);
  CHECK(name->hint == "store it with `pinectl secret set OTHER_KEY_SECRET` and write keySecret: OTHER_KEY_SECRET in its place");
  CHECK(api->line == 4);
  CHECK(findError(r.errors, "providers.other.keySecret", "looks like a secret"));
  CHECK(findError(r.errors, "mcpServers.gh.env.GITHUB_TOKEN", "looks like a secret"));
  // A credential-named key is flagged whatever its value looks like.
  CHECK(findError(r.errors, "mcpServers.calendar.headers.Authorization", "looks like a secret"));
  // Reported once, not again as "not a secret name".
  int count = 0;
  for (auto& e : r.errors) count += e.keyPath == "providers.other.keySecret";
  CHECK(count == 1);
}

TEST_CASE("secret placeholders: where they are allowed, and their syntax") {
  TempHome h;
  h.write(".env", "GH_TOKEN=x\n");
  h.write("agents/main/agent.yaml",
          "description: ${secret:GH_TOKEN}\nmcpServers:\n  gh:\n    command: [github-mcp]\n"
          "    env: {GITHUB_TOKEN: \"${secret:GH_TOKEN}\", BAD: \"${secret:lower}\"}\n");
  auto r = h.load();
  auto* d = findError(r.errors, "description");
  REQUIRE_MESSAGE(d, dump(r.errors));
  CHECK(d->message == "a ${secret:...} placeholder is not allowed here");
  CHECK(findError(r.errors, "mcpServers.gh.env.BAD", "does not name a secret"));
  CHECK_FALSE(findError(r.errors, "mcpServers.gh.env.GITHUB_TOKEN"));
}

TEST_CASE("sandbox paths: ${WORKSPACE} ${HOME} ${TMPDIR} are known; anything else is named") {
  TempHome h;
  h.write("agents/house/agent.yaml",
          "sandbox:\n  read: [\"${WORKSPACE}/../x\", \"${WORKSPCE}/data\", \"$HOME/x\", \"${HOME}/.cache\", /srv/photos]\n"
          "  write: [\"${TMPDIR}/house\", relative/path, \"" + h.root + "/agents\", /]\n");
  auto r = h.load();
  auto* unknown = findError(r.errors, "sandbox.read[1]");
  REQUIRE_MESSAGE(unknown, dump(r.errors));
  CHECK(unknown->message == "unknown variable ${WORKSPCE}; sandbox paths know ${WORKSPACE}, ${HOME} and ${TMPDIR}");
  CHECK(unknown->hint == "did you mean 'WORKSPACE'?");
  CHECK(unknown->line == 2);
  CHECK(findError(r.errors, "sandbox.read[0]", "'..'"));
  CHECK(findError(r.errors, "sandbox.read[2]", "a '$' must start"));
  CHECK_FALSE(findError(r.errors, "sandbox.read[3]"));
  CHECK_FALSE(findError(r.errors, "sandbox.read[4]"));
  CHECK_FALSE(findError(r.errors, "sandbox.write[0]"));
  CHECK(findError(r.errors, "sandbox.write[1]", "expected an absolute path"));
  CHECK(findError(r.errors, "sandbox.write[2]", "pine's home"));
  CHECK(findError(r.errors, "sandbox.write[3]", "whole file system"));
}

TEST_CASE("pine.yaml and pine.json both present: pick one") {
  TempHome h;
  h.write("pine.json", "{}\n");
  auto r = h.load();
  auto* e = findError(r.errors, "", "both pine.yaml and pine.json exist");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->file == h.path("pine.json"));
  CHECK(e->hint.find("pick one") != std::string::npos);

  TempHome h2;
  h2.write("agents/scout/agent.json", "{}\n");
  r = h2.load();
  CHECK(findError(r.errors, "", "both agents/scout/agent.yaml and agents/scout/agent.json exist"));

  TempHome h3;
  h3.write("models.yml", "{}\n");
  r = h3.load();
  CHECK(findError(r.errors, "", "pine reads models.yaml (or models.json), not .yml"));
}

TEST_CASE("malformed YAML and JSON are reported with their line and column") {
  TempHome h;
  h.write("pine.yaml", "defaults:\n  model: demo\nlimits:\n  queuePerAgent: [1, 2\n  eventHops: 3\n");
  auto r = h.load();
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].file == h.path("pine.yaml"));
  CHECK(r.errors[0].message.rfind("malformed YAML: ", 0) == 0);
  CHECK(r.errors[0].line == 5);
  CHECK(r.errors[0].column >= 1);

  TempHome h2;
  h2.remove("agents/scout/agent.yaml");
  h2.write("agents/scout/agent.json", "{\n  \"description\": \"x\",\n  \"tools\": [\"read\"]\n  \"untrusted\": false\n}\n");
  r = h2.load();
  REQUIRE_MESSAGE(r.errors.size() == 1, dump(r.errors));
  CHECK(r.errors[0].file == h2.path("agents/scout/agent.json"));
  CHECK(r.errors[0].message.rfind("malformed JSON: ", 0) == 0);
  CHECK(r.errors[0].line == 4);
  CHECK(r.errors[0].column == 3);
}

TEST_CASE("JSON spelling: same schema, correct positions, same result as YAML") {
  TempHome h;
  h.remove("agents/scout/agent.yaml");
  h.write("agents/scout/agent.json", "{\n\t\"description\": \"x\",\n\t\"toolz\": [\"read\"]\n}\n");
  auto r = h.load();
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].line == 3);
  CHECK(r.errors[0].column == 2);
  CHECK(r.errors[0].hint == "did you mean 'tools'?");

  h.write("agents/scout/agent.json",
          "{\"tools\": [\"read\", \"grep\"], \"mcpServers\": {\"web\": {\"bundled\": \"web\"}},"
          " \"untrusted\": {\"stateWrite\": true}, \"budget\": {\"tokensPerDay\": 5000}}");
  r = h.load();
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  const AgentConfig& a = r.home->agents.at("scout");
  CHECK(a.file == h.path("agents/scout/agent.json"));
  CHECK(a.tools == std::vector<std::string>{"read", "grep"});
  CHECK(a.hasWebTools());
  CHECK(a.mcpServers.at("web").taints);
  CHECK(a.untrusted.stateWrite);
  CHECK(*a.budget.tokensPerDay == 5000);
  // A quoted number in JSON is a string, and a string is not an integer.
  h.write("agents/scout/agent.json", "{\"budget\": {\"tokensPerDay\": \"5000\"}}");
  r = h.load();
  CHECK(findError(r.errors, "budget.tokensPerDay", "got the string '5000'"));
}

TEST_CASE("every error in a file is reported, not just the first") {
  TempHome h;
  h.write("pine.yaml",
          "defaults: {mode: sometimes, model: demo}\nhttp: {port: 0}\nsecurity: {taint: always}\nlimts: {}\n"
          "schedules:\n  - name: x\n    agent: main\n    cron: \"61 * * * *\"\n    task: t\n");
  auto r = h.load();
  CHECK_MESSAGE(r.errors.size() == 5, dump(r.errors));
  CHECK(findError(r.errors, "defaults.mode"));
  CHECK(findError(r.errors, "http.port"));
  CHECK(findError(r.errors, "security.taint"));
  CHECK(findError(r.errors, "limts", "unknown key"));
  auto* cron = findError(r.errors, "schedules[0].cron");
  REQUIRE(cron);
  CHECK(cron->message == "'61' is outside 0-59 in the minute field");
}

TEST_CASE("duplicate keys are errors, since one of them would be dropped silently") {
  TempHome h;
  h.write("agents/house/agent.yaml", "mode: auto\ndescription: a\nmode: bypass\n");
  auto r = h.load();
  auto* e = findError(r.errors, "mode", "duplicate key");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->message == "duplicate key (first on line 1)");
  CHECK(e->line == 3);
}

TEST_CASE("sources: required keys, per-type rules, webhooks need a secret unless open") {
  TempHome h;
  h.write(".env", "HOOK=0123456789abcdef01\n");
  h.write("pine.yaml",
          "defaults: {model: demo}\n"
          "webhooks:\n  - {name: a, topic: ci/x}\n  - {name: b, topic: ci/y, open: true, secret: HOOK}\n"
          "  - {name: c, topic: \"ci/#\", secret: HOOK}\n  - {name: d, topic: pine/x, secret: HOOK}\n"
          "sources:\n  - {name: a, type: folder, path: relative}\n  - {type: mqt}\n"
          "  - {name: t, type: telegram, tokenSecret: HOOK, trust: owner}\n"
          "  - {name: u, use: source-types/nope.js}\n"
          "  - {name: state, use: source-types/nope.js}\n  - {name: statement, use: source-types/nope.js}\n");
  auto r = h.load();
  std::string all = dump(r.errors);
  CHECK_MESSAGE(findError(r.errors, "webhooks[0]", "a webhook needs a secret"), all);
  CHECK(findError(r.errors, "webhooks[1].secret", "an open hook takes no secret"));
  CHECK(findError(r.errors, "webhooks[2].topic", "fixed topic"));
  CHECK(findError(r.errors, "webhooks[3].topic", "pine's own topic space"));
  CHECK(findError(r.errors, "sources[0].name", "another source or webhook is already called 'a'"));
  CHECK(findError(r.errors, "sources[0].path", "expected an absolute path"));
  CHECK(findError(r.errors, "sources[1]", "missing required key 'name'"));
  auto* type = findError(r.errors, "sources[1].type");
  REQUIRE(type);
  CHECK(type->hint == "did you mean 'mqtt'?");
  CHECK(findError(r.errors, "sources[2].trust", "Telegram"));
  CHECK(findError(r.errors, "sources[3].use", "file 'source-types/nope.js' does not exist"));
  // A program's events take its name as their topic (before: "state" published on pine's own state
  // topics); the twin, a name that only begins like one, is fine.
  auto* reserved = findError(r.errors, "sources[4].name", "take its name as their topic");
  REQUIRE_MESSAGE(reserved, all);
  CHECK(reserved->line == 12);
  CHECK_FALSE(findError(r.errors, "sources[5].name"));
}

TEST_CASE("sources: an open webhook source cannot be trust: owner; with a secret it can, open it can be untrusted") {
  TempHome h;
  h.write(".env", "HOOK=0123456789abcdef01\n");
  h.write("pine.yaml",
          "defaults: {model: demo}\n"
          "sources:\n"
          "  - {name: a, type: webhook, topic: ci/a, open: true, trust: owner}\n"
          "  - {name: b, type: webhook, topic: ci/b, secret: HOOK, trust: owner}\n"
          "  - {name: c, type: webhook, topic: ci/c, open: true}\n");
  auto r = h.load();
  std::string all = dump(r.errors);
  auto* e = findError(r.errors, "sources[0].trust", "an open webhook cannot count as yours");
  REQUIRE_MESSAGE(e, all);
  CHECK(e->line == 3);
  CHECK(e->hint.find("secret") != std::string::npos);
  CHECK_MESSAGE(r.errors.size() == 1, all);  // b and c are fine
}

TEST_CASE("telegram sources: base URL, groups, file cap and notices are checked where they are written") {
  TempHome h;
  h.write(".env", "TG=123456789:AAHtesttokenabcdefghijklmnopqrstuvw\n");
  h.write("pine.yaml",
          "defaults: {model: demo}\n"
          "sources:\n"
          "  - {name: a, type: telegram, tokenSecret: TG, baseUrl: \"ftp://example.com\", maxFileMb: 0}\n"
          "  - {name: b, type: telegram, tokenSecret: TG, groups: [\"house\"], maxFileMb: 51}\n"
          "  - {name: c, type: telegram, tokenSecret: TG, notify: {send: false, gossip: true, budget: maybe}}\n"
          "  - {name: d, type: telegram, tokenSecret: TG, baseUrl: \"http://127.0.0.1:8081\", groups: [-100123],\n"
          "     maxFileMb: 10, notify: {taskFailed: false}}\n");
  auto r = h.load();
  std::string all = dump(r.errors);
  CHECK_MESSAGE(findError(r.errors, "sources[0].baseUrl"), all);
  CHECK(findError(r.errors, "sources[0].maxFileMb"));
  CHECK(findError(r.errors, "sources[1].groups[0]"));
  CHECK(findError(r.errors, "sources[1].maxFileMb"));
  CHECK(findError(r.errors, "sources[2].notify.gossip", "unknown key"));
  CHECK(findError(r.errors, "sources[2].notify.budget"));
  CHECK_FALSE(findError(r.errors, "sources[3]"));
  CHECK(r.errors.size() == 6);
}

TEST_CASE("ftp and http sources: a login value or token under 8 bytes is an error with its line; pinectl secret set refuses it") {
  // pine-egress fills in no value it could not redact from the answer: the source failed at
  // every look, while check said nothing and secret set stored it.
  TempHome h;
  h.write(".env", "FU=admin\nFP=secret-password\nTOK=short\n");
  h.write("pine.yaml", "defaults: {model: demo}\n"
                       "sources:\n"
                       "  - {name: a, type: ftp, url: \"ftps://files.example/drop/\", usernameSecret: FU, passwordSecret: FP}\n"
                       "  - {name: b, type: http, url: \"https://example.com/\", tokenSecret: TOK}\n");
  auto r = h.load();
  std::string all = dump(r.errors);
  auto* user = findError(r.errors, "sources[0].usernameSecret", "secret 'FU' is shorter than 8 bytes");
  REQUIRE_MESSAGE(user, all);
  CHECK(user->line == 3);
  CHECK(findError(r.errors, "sources[1].tokenSecret", "secret 'TOK' is shorter than 8 bytes"));
  CHECK_MESSAGE(r.errors.size() == 2, all);
  CHECK(secretValueProblem(h.root, {"FU", "FP", "TOK"}, "FP", 5).find("pine.yaml:3") != std::string::npos);
  // The twins: values of 8 bytes and more load, and may be set.
  h.write(".env", "FU=admin-01\nFP=secret-password\nTOK=a-long-token\n");
  r = h.load();
  CHECK_MESSAGE(r.ok(), dump(r.errors));
  CHECK(secretValueProblem(h.root, {"FU", "FP", "TOK"}, "FP", 8).empty());
}

TEST_CASE("ftp sources: maxInboxMb only with fetch, and never less than maxFileMb") {
  TempHome h;
  h.write(".env", "FU=ftp-user-1\nFP=secret-password\n");
  const std::string ftp = "type: ftp, url: \"ftps://files.example/drop/\", usernameSecret: FU, passwordSecret: FP";
  h.write("pine.yaml", "defaults: {model: demo}\n"
                       "sources:\n"
                       "  - {name: a, " + ftp + ", maxInboxMb: 100}\n"
                       "  - {name: b, " + ftp + ", fetch: true, maxFileMb: 50, maxInboxMb: 40}\n"
                       "  - {name: c, " + ftp + ", fetch: true, maxInboxMb: 0}\n"
                       "  - {name: d, " + ftp + ", fetch: true, maxFileMb: 50, maxInboxMb: 50}\n"
                       "  - {name: e, " + ftp + ", fetch: true}\n");
  auto r = h.load();
  std::string all = dump(r.errors);
  CHECK_MESSAGE(findError(r.errors, "sources[0].maxInboxMb", "limits the files fetched"), all);
  CHECK(findError(r.errors, "sources[1].maxInboxMb", "less than maxFileMb (50)"));
  CHECK(findError(r.errors, "sources[2].maxInboxMb"));
  CHECK_MESSAGE(r.errors.size() == 3, all);  // d and e are fine

  // The legitimate twins alone load, with what they say (e: the default).
  h.write("pine.yaml", "defaults: {model: demo}\n"
                       "sources:\n"
                       "  - {name: d, " + ftp + ", fetch: true, maxFileMb: 50, maxInboxMb: 50}\n"
                       "  - {name: e, " + ftp + ", fetch: true}\n");
  r = h.load();
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  CHECK(r.home->pine.sources.at(0).maxInboxMb == 50);
  CHECK(r.home->pine.sources.at(1).maxInboxMb == 1024);
}

TEST_CASE("agents: tool names, approve patterns, publish topics, delegation and budgets are checked") {
  TempHome h;
  h.write("agents/house/agent.yaml",
          "tools: [read, bsh]\napprove: [\"bash:*rm*\", \"mcp__calendr__delete_*\", \"sned:house\", \"*\"]\n"
          "approveWhenTainted: [publish_event, \":x\"]\npublish: [state/house, house/#]\n"
          "delegateTo: [house, main]\nbudget: {costPerDay: 2}\nmcpServers:\n  calendar: {url: https://cal.example/mcp}\n"
          "  web: {bundled: web, taints: false}\n  both: {bundled: browser, command: [x]}\n");
  h.write("models.yaml", "providers: {demo: {kind: script, script: providers/demo-replies.yaml}}\n"
                         "models: {demo: {provider: demo}}\n");
  auto r = h.load();
  std::string all = dump(r.errors);
  auto* tool = findError(r.errors, "tools[1]");
  REQUIRE_MESSAGE(tool, all);
  CHECK(tool->hint == "did you mean 'bash'?");
  CHECK_FALSE(findError(r.errors, "approve[0]"));
  auto* server = findError(r.errors, "approve[1]");
  REQUIRE(server);
  CHECK(server->message == "no MCP server 'calendr' in this agent's mcpServers");
  CHECK(server->hint == "did you mean 'calendar'?");
  CHECK(findError(r.errors, "approve[2]", "unknown tool 'sned'"));
  CHECK_FALSE(findError(r.errors, "approve[3]"));
  CHECK(findError(r.errors, "approveWhenTainted[1]", "empty"));
  CHECK(findError(r.errors, "publish[0]", "pine's own topic space"));
  CHECK_FALSE(findError(r.errors, "publish[1]"));
  CHECK(findError(r.errors, "delegateTo[0]", "does not delegate to itself"));
  CHECK(findError(r.errors, "delegateTo", "has no 'delegate'"));
  CHECK(findError(r.errors, "budget.costPerDay", "has no pricing"));
  CHECK(findError(r.errors, "mcpServers.web.taints", "always taints"));
  CHECK(findError(r.errors, "mcpServers.both", "give one of"));
}

TEST_CASE("a configuration change is validated exactly like the file on disk, which stays untouched") {
  TempHome h;
  auto ok = validateChange(h.root, "agents/newbie/agent.yaml", "description: new\ntools: [read]\n");
  REQUIRE_MESSAGE(ok.ok(), ok.formatErrors());
  CHECK(ok.home->agents.count("newbie") == 1);
  CHECK(loadHome(h.root).home->agents.count("newbie") == 0);

  auto bad = validateChange(h.root, "pine.yaml", "defaults: {model: demo}\nroutes:\n  - {topic: a/b, agent: nobody}\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.errors[0].file == h.path("pine.yaml"));
  CHECK(bad.errors[0].line == 3);
  CHECK(bad.errors[0].keyPath == "routes[0].agent");
  CHECK(loadHome(h.root).ok());

  // Deleting an agent that a route needs is caught too.
  LoadOptions del;
  del.overlay["agents/house/agent.yaml"] = std::nullopt;
  auto gone = loadHome(h.root, del);
  CHECK(findError(gone.errors, "", "agent folder without agent.yaml"));
  CHECK(findError(gone.errors, "routes[0].agent", "no agent 'house'"));
  CHECK(findError(gone.errors, "sources[0].agent", "no agent 'house'"));
}

TEST_CASE("validateFileText checks one file without the home") {
  auto errors = validateFileText("agents/x/agent.yaml", "mode: auto\ntoolz: []\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].format() == "agents/x/agent.yaml:2:1: toolz: unknown key 'toolz' (did you mean 'tools'?)");
  CHECK(validateFileText("pine.json", "{\"limits\": {\"eventHops\": 3}}").empty());
  CHECK(validateFileText("pine.json", "{\"limits\": {\"eventHops\": 0}}").size() == 1);
  CHECK(validateFileText("notes.txt", "").size() == 1);
  CHECK(validateFileText(".env", "A=1\nb=2\n").size() == 1);
}

TEST_CASE("a configuration that does not validate never replaces the running one") {
  TempHome h;
  ActiveConfig active(h.root);
  REQUIRE(active.reload().empty());
  auto first = active.current();
  REQUIRE(first);
  CHECK(first->pine.http.port == 7433);

  h.write("pine.yaml", "defaults: {model: demo}\nhttp: {port: 8000}\nlimits: {eventHops: 0}\n");
  auto errors = active.reload();
  CHECK(errors.size() == 1);
  CHECK(active.current() == first);

  h.write("pine.yaml", "defaults: {model: demo}\nhttp: {port: 8000}\n");
  CHECK(active.reload().empty());
  CHECK(active.current() != first);
  CHECK(active.current()->pine.http.port == 8000);
}

TEST_CASE("rules: cron, topics, names") {
  using namespace pine::config::detail;
  CHECK(cronProblem("0 7 * * mon-fri").empty());
  CHECK(cronProblem("*/15 8-18 1,15 jan-dec 0").empty());
  // The scheduler's parser (schedule/cron.h) answers; tests/schedule/ has every form.
  CHECK(cronProblem("0 7 * *") ==
        "expected five fields (minute hour day-of-month month day-of-week), e.g. \"0 7 * * mon-fri\", got 4");
  CHECK(cronProblem("0 24 * * *") == "'24' is outside 0-23 in the hour field");
  CHECK(cronProblem("0 7 * * 5-1") == "'5-1' runs backwards in the day of week field; write it as two ranges "
                                      "(e.g. 22-23,0-2)");
  CHECK(cronProblem("*/0 * * * *") == "bad step '*/0' in the minute field: a step is a whole number from 1 to 59");
  CHECK(cronProblem("0 7 * foo *").rfind("cannot read 'foo' in the month field: use 1-12 or jan-dec", 0) == 0);
  CHECK(topicPatternProblem("house/+/contact", true).empty());
  CHECK(topicPatternProblem("house/#", true).empty());
  CHECK_FALSE(topicPatternProblem("house/#/x", true).empty());
  CHECK_FALSE(topicPatternProblem("house//x", true).empty());
  CHECK_FALSE(topicPatternProblem("house/a+", true).empty());
  CHECK_FALSE(topicPatternProblem("house/+", false).empty());
  CHECK(isName("house-2"));
  CHECK_FALSE(isName("House"));
  CHECK_FALSE(isName("-x"));
  CHECK(isModelName("claude-sonnet-4.5"));
}

TEST_CASE("did you mean: distance, spelling variants, nothing when far") {
  CHECK(editDistance("kitten", "sitting") == 3);
  CHECK(editDistance("ab", "ba") == 1);
  CHECK(nearest("queuPerAgent", {"queuePerAgent", "eventHops"}) == "queuePerAgent");
  CHECK(nearest("base_url", {"baseUrl", "kind"}) == "baseUrl");
  CHECK(nearest("KIND", {"baseUrl", "kind"}) == "kind");
  CHECK(nearest("xyz", {"baseUrl", "kind"}).empty());
  CHECK(nearest("tols", {"tools", "mode"}) == "tools");
  CHECK(didYouMean("scuot", {"main", "scout", "house"}) == "did you mean 'scout'?");
}

TEST_CASE("what looks like a secret, and what does not") {
  for (const char* s : {"sk-proj-Abcdefghijklmnop123", "ghp_abcdefghijklmnopqrstuvwxyz0123", "xoxb-1234567890-abcdefghij",
                        "AKIAIOSFODNN7EXAMPLE", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
                        "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "Bearer Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MA",
                        "-----BEGIN OPENSSH PRIVATE KEY-----"})
    CHECK_MESSAGE(looksLikeSecret(s), s);
  for (const char* s : {"claude-sonnet-4-5-20250929", "Qwen2.5-Coder-32B-Instruct-GGUF", "meta-llama/Llama-3.3-70B-Instruct",
                        "https://api.openai.com/v1", "/Users/alex/Documents/Projects2024/SomethingLong",
                        "zigbee2mqtt/+/contact", "Summarise what changed in the house overnight.", "OPENAI_KEY",
                        "mqtt://127.0.0.1:1883", "0 7 * * mon-fri", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4"})
    CHECK_FALSE_MESSAGE(looksLikeSecret(s), s);
}

static std::string slurpFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_CASE("a webhook secret shorter than 16 bytes is an error with its file and line; a long one loads") {
  TempHome h;
  h.write("pine.yaml", slurpFile(h.path("pine.yaml")) +
                           "\nwebhooks:\n  - name: gh\n    topic: ci/github\n    secret: GH_HOOK\n    auth: hmac\n");
  h.write(".env", "GH_HOOK=short\n");
  auto r = h.load();
  auto* e = findError(r.errors, "webhooks[0].secret");
  REQUIRE_MESSAGE(e, dump(r.errors));
  CHECK(e->message.find("secret 'GH_HOOK' is shorter than 16 bytes") == 0);
  CHECK(e->hint.find("pinectl secret set GH_HOOK") != std::string::npos);
  CHECK(e->line > 0);
  CHECK(e->file == h.path("pine.yaml"));
  h.write(".env", "GH_HOOK=0123456789abcdef0123\n");
  r = h.load();
  CHECK_MESSAGE(r.ok(), dump(r.errors));
  // Keys for other senders only with auth: hmac.
  h.write("pine.yaml", slurpFile(h.path("pine.yaml")) + "  - {name: ha, topic: home/ha, secret: GH_HOOK, signatureHeader: X-Sig}\n");
  r = h.load();
  CHECK(findError(r.errors, "webhooks[1].signatureHeader", "signatureHeader is for auth: hmac"));
}

TEST_CASE("a webhook's signature or time header cannot be one HTTP itself uses, nor both the same one") {
  TempHome h;
  const std::string base = slurpFile(h.path("pine.yaml"));
  h.write(".env", "GH_HOOK=0123456789abcdef0123\n");
  auto with = [&](const std::string& fields) {
    h.write("pine.yaml", base + "\nwebhooks:\n  - {name: gh, topic: ci/github, secret: GH_HOOK, auth: hmac, " + fields + "}\n");
    return h.load();
  };
  auto r = with("signatureHeader: Host");
  CHECK_MESSAGE(findError(r.errors, "webhooks[0].signatureHeader", "'host' is a header HTTP itself uses"), dump(r.errors));
  r = with("signatureHeader: X-Sig, timestampHeader: Content-Length");
  CHECK(findError(r.errors, "webhooks[0].timestampHeader", "'content-length' is a header HTTP itself uses"));
  r = with("signatureHeader: X-Sig, timestampHeader: x-sig");
  CHECK(findError(r.errors, "webhooks[0].timestampHeader", "the same header as signatureHeader"));
  r = with("timestampHeader: X-Hub-Signature-256");  // the default signature header
  CHECK(findError(r.errors, "webhooks[0].timestampHeader", "the same header as signatureHeader"));
  // The twin: two headers of the sender's own.
  r = with("signatureHeader: X-Sig, timestampHeader: X-Time");
  CHECK_MESSAGE(r.ok(), dump(r.errors));
}
