// The example home in config/examples/home: it loads with no errors, has the
// layout that keeps the pieces apart, and gives no security notes once its
// modes are what pined sets (a git checkout's 644/755 are the only notes).
#include <doctest/doctest.h>

#include <sstream>

#include "config/check.h"
#include "config/env_file.h"
#include "helpers.h"

using namespace pine::config;
using pine::config::test::dump;
using pine::config::test::exampleHome;
using pine::config::test::TempHome;

TEST_CASE("the example home loads with zero errors") {
  auto r = loadHome(exampleHome());
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  const Home& h = *r.home;
  CHECK(h.agents.size() == 3);
  CHECK(h.envSecretNames.empty());  // the example references no secret; .env.example shows the names

  const AgentConfig& main = h.agents.at("main");
  CHECK_FALSE(main.hasWebTools());
  CHECK(main.sandbox.enabled);
  CHECK(main.sandbox.network == Network::None);
  CHECK(main.delegateTo == std::vector<std::string>{"scout", "house"});
  CHECK(h.effectiveMode(main) == Mode::Auto);

  const AgentConfig& scout = h.agents.at("scout");
  CHECK(scout.hasWebTools());
  CHECK(scout.mcpServers.at("web").taints);
  CHECK(scout.delegateTo.empty());
  CHECK_FALSE(scout.hasTool("state_set"));
  CHECK(scout.untrusted.accept);

  const AgentConfig& house = h.agents.at("house");
  CHECK_FALSE(house.hasTool("bash"));
  CHECK(house.untrusted.stateWrite);
  CHECK(house.publish == std::vector<std::string>{"house/alert", "house/summary"});
  CHECK(house.approveWhenTainted == std::vector<std::string>{"publish_event", "send"});

  REQUIRE(h.pine.sources.size() == 1);
  CHECK(h.pine.sources[0].type == "mqtt");
  CHECK(h.pine.sources[0].trust == Trust::Untrusted);
  CHECK(h.models.providers.at("demo").kind == ProviderKind::Script);
  CHECK(h.effectiveModel(house) == "demo");
  CHECK(h.pine.http.host == "127.0.0.1");
}

TEST_CASE("the example's .env.example holds names with placeholder values") {
  std::vector<ConfigError> errors;
  auto env = parseEnvFile(exampleHome() + "/.env.example", &errors);
  CHECK(errors.empty());
  CHECK(env.count("OPENAI_KEY") == 1);
  for (auto& [k, v] : env) CHECK(v == "replace-me");
}

TEST_CASE("the example home gives no security notes when installed with pined's modes") {
  TempHome h;  // a copy: home 700, pine.yaml and models.yaml 600
  auto r = h.load();
  REQUIRE(r.ok());
  auto notes = securityNotes(*r.home, gatherHomeFacts(*r.home, "full"));
  std::string all;
  for (auto& n : notes) all += n.format() + "\n";
  CHECK_MESSAGE(notes.empty(), all);
  std::ostringstream out;
  CHECK(runCheck(h.root, "full", "", out) == 0);
  CHECK(out.str() == "No security notes\n");
}

TEST_CASE("the example straight from a checkout: only file-mode notes are expected") {
  auto r = loadHome(exampleHome());
  REQUIRE(r.ok());
  for (auto& n : securityNotes(*r.home, gatherHomeFacts(*r.home, "full")))
    CHECK_MESSAGE(n.fix.rfind("chmod ", 0) == 0, n.format());
}
