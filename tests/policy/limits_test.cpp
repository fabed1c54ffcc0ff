// Limits (layer 11).
#include "broker/policy/run_limits.h"

#include "tests/policy/helpers.h"

using namespace policy_test;
using namespace pine::policy;

TEST_CASE("limits: delegation list, loops and depth") {
  auto main = agent("main");
  main.delegateTo = {"*"};
  auto scout = agent("scout");
  scout.delegateTo = {"reader"};
  CHECK_FALSE(checkDelegation({"main"}, "scout", 3, main));
  CHECK_FALSE(checkDelegation({}, "scout", 3, main));
  CHECK_FALSE(checkDelegation({"main", "scout"}, "reader", 3, scout));
  auto notListed = checkDelegation({"main", "scout"}, "house", 3, scout);
  REQUIRE(notListed);
  CHECK(notListed->find("delegateTo") != std::string::npos);
  CHECK(checkDelegation({"main"}, "main", 3, main));                // itself
  auto loop = checkDelegation({"main", "scout"}, "main", 3, agent("x", {}));
  CHECK(loop);  // not listed either; a listed loop:
  auto star = agent("scout");
  star.delegateTo = {"*"};
  auto l = checkDelegation({"main", "scout"}, "main", 5, star);
  REQUIRE(l);
  CHECK(l->find("loop") != std::string::npos);
  // Depth: a chain of a -> b -> c is 2 delegations, the next one 3.
  auto c = agent("c");
  c.delegateTo = {"*"};
  CHECK_FALSE(checkDelegation({"a", "b", "c"}, "d", 3, c));
  auto deep = checkDelegation({"a", "b", "c"}, "d", 2, c);
  REQUIRE(deep);
  CHECK(deep->find("delegationDepth") != std::string::npos);
  CHECK(checkDelegation({"main"}, "scout", 0, main));
}

TEST_CASE("limits: hops and queue") {
  CHECK_FALSE(checkHops(0, 5));
  CHECK_FALSE(checkHops(5, 5));
  CHECK(checkHops(6, 5));
  CHECK_FALSE(checkQueue(0, 20));
  CHECK_FALSE(checkQueue(19, 20));
  CHECK(checkQueue(20, 20));
  CHECK(checkQueue(0, 0));
}

TEST_CASE("limits: untrusted prompts are cut at a character boundary and say so") {
  CHECK(clipUntrustedPrompt("short", 100) == "short");
  CHECK(clipUntrustedPrompt("", 0).empty());
  std::string big(1000, 'x');
  auto cut = clipUntrustedPrompt(big, 200);
  CHECK(cut.size() <= 200);
  CHECK(cut.find("cut") != std::string::npos);
  CHECK(cut.find("1000 bytes") != std::string::npos);
  // Multi-byte characters are never split, wherever the limit falls.
  std::string umlauts;
  for (int i = 0; i < 300; ++i) umlauts += "\xc3\xa4";  // ä
  for (size_t max = 60; max < 80; ++max) {
    CAPTURE(max);
    auto s = clipUntrustedPrompt(umlauts, max);
    CHECK(s.size() <= max);
    size_t body = s.find("\n[pine");
    REQUIRE(body != std::string::npos);
    CHECK(body % 2 == 0);
  }
  std::string emoji;
  for (int i = 0; i < 100; ++i) emoji += "\xf0\x9f\x8c\xb2";  // 4-byte character
  auto e = clipUntrustedPrompt(emoji, 101);
  CHECK(e.find("\n[pine") % 4 == 0);
}

TEST_CASE("limits: budgets") {
  pine::config::Budget none;
  CHECK_FALSE(checkBudget(none, BudgetUse{1000000000, 1e6, 1e6}));
  pine::config::Budget b;
  b.tokensPerDay = 100000;
  b.costPerDay = 5.0;
  b.costPerTask = 1.0;
  CHECK_FALSE(checkBudget(b, BudgetUse{99999, 4.99, 0.99}));
  auto t = checkBudget(b, BudgetUse{100000, 0, 0});
  REQUIRE(t);
  CHECK(t->find("tokensPerDay") != std::string::npos);
  auto d = checkBudget(b, BudgetUse{0, 5.0, 0});
  REQUIRE(d);
  CHECK(d->find("costPerDay") != std::string::npos);
  auto k = checkBudget(b, BudgetUse{0, 0, 1.5});
  REQUIRE(k);
  CHECK(k->find("costPerTask") != std::string::npos);
  // Small sums keep the decimals that tell them apart from the limit; limits keep two.
  pine::config::Budget small;
  small.costPerDay = 0.01;
  auto s = checkBudget(small, BudgetUse{0, 0.0141, 0});
  REQUIRE(s);
  CHECK_MESSAGE(s->find("cost today 0.0141; the agent's budget.costPerDay is 0.01 ") != std::string::npos, *s);
  CHECK(checkBudget(b, BudgetUse{0, 7.5, 0})->find("cost today 7.50;") != std::string::npos);
}

TEST_CASE("limits: RepeatBreaker trips on the third identical call in a row") {
  RepeatBreaker r;
  nlohmann::json a = {{"command", "ls"}};
  CHECK_FALSE(r.tripped("bash", a));
  CHECK_FALSE(r.tripped("bash", a));
  CHECK(r.tripped("bash", a));
  CHECK(r.tripped("bash", a));
  CHECK_FALSE(r.tripped("bash", {{"command", "ls -l"}}));  // different arguments: starts over
  CHECK_FALSE(r.tripped("bash", a));
  CHECK_FALSE(r.tripped("read", a));                       // different tool: starts over
  CHECK_FALSE(r.tripped("bash", a));
  CHECK_FALSE(r.tripped("bash", a));
  CHECK(r.tripped("bash", a));
  // Key order does not make calls different.
  RepeatBreaker two(2);
  CHECK_FALSE(two.tripped("x", nlohmann::json::parse(R"({"a":1,"b":2})")));
  CHECK(two.tripped("x", nlohmann::json::parse(R"({"b":2,"a":1})")));
}
