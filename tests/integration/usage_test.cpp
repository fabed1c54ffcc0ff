// pinectl usage through the real process tree: agent alpha talks to a fake OpenAI server, beta to
// a fake Anthropic server (both stream the recorded shapes, with cache tokens in their usage),
// gamma to the script model, which has no pricing. The sums and costs pinectl shows are checked
// against costs computed here by hand from the test's models.yaml prices, cache prices included;
// beta's costPerDay is reached only if cache tokens are priced, and then its next run is stopped.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/integration/harness.h"
#include "tests/providers/fake_server.h"

using namespace pine::test;
using namespace std::chrono_literals;
using pine::model::test::FakeReply;
using pine::model::test::FakeServer;
using nlohmann::json;

namespace {

// Prices per million tokens, as written into models.yaml below.
constexpr double kOaIn = 2, kOaOut = 8, kOaCacheRead = 0.5;
constexpr double kAnIn = 3, kAnOut = 15, kAnCacheRead = 0.3, kAnCacheWrite = 3.75;

FakeReply sse(const std::string& body) {
  FakeReply r;
  // Two pieces, the cut inside an event: the broker's decoder reads across reads.
  r.pieces = pine::model::test::splitAt(body, {body.size() / 2});
  return r;
}

// A text answer in OpenAI's chat completions stream; prompt_tokens includes the cached ones.
FakeReply openaiAnswer(const std::string& text, int prompt, int cached, int out) {
  auto chunk = [](const json& delta, const json& finish) {
    return "data: " +
           json{{"id", "c1"}, {"object", "chat.completion.chunk"}, {"model", "test-model"},
                {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}}
               .dump() +
           "\n\n";
  };
  json usage = {{"prompt_tokens", prompt}, {"completion_tokens", out}, {"total_tokens", prompt + out},
                {"prompt_tokens_details", {{"cached_tokens", cached}}}};
  return sse(chunk({{"role", "assistant"}, {"content", text}}, nullptr) + chunk(json::object(), "stop") +
             "data: " + json{{"id", "c1"}, {"choices", json::array()}, {"usage", usage}}.dump() + "\n\ndata: [DONE]\n\n");
}

// A text answer in Anthropic's messages stream; cache reads and writes come in message_start.
FakeReply anthropicAnswer(const std::string& text, int in, int cacheRead, int cacheWrite, int out) {
  auto ev = [](const json& d) { return "event: " + d["type"].get<std::string>() + "\ndata: " + d.dump() + "\n\n"; };
  json start = {{"id", "msg_1"}, {"type", "message"}, {"role", "assistant"}, {"model", "test-model"},
                {"content", json::array()}, {"stop_reason", nullptr},
                {"usage", {{"input_tokens", in}, {"cache_read_input_tokens", cacheRead},
                           {"cache_creation_input_tokens", cacheWrite}, {"output_tokens", 1}}}};
  return sse(ev({{"type", "message_start"}, {"message", start}}) +
             ev({{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}}) +
             ev({{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", text}}}}) +
             ev({{"type", "content_block_stop"}, {"index", 0}}) +
             ev({{"type", "message_delta"}, {"delta", {{"stop_reason", "end_turn"}}}, {"usage", {{"output_tokens", out}}}}) +
             ev({{"type", "message_stop"}}));
}

const json* agentRow(const json& usage, const std::string& agent) {
  for (const auto& a : usage["agents"])
    if (a["agent"] == agent) return &a;
  return nullptr;
}

// A home with the key K set by pinectl (configuration may only name a secret .env holds), then
// the two fake providers and the three agents.
void writeHome(const std::string& home, const std::string& oaUrl, const std::string& anUrl) {
  {
    Pined first(home, {}, {"alpha"});
    auto set = first.ctl({"secret", "set", "K"}, "sk-usage-test-9f3Kd02LmQ\n");
    REQUIRE_MESSAGE(set.exitCode == 0, set.err);
    first.stop();
  }
  writeText(home + "/models.yaml",
            "providers:\n"
            "  oa: {kind: openai, baseUrl: '" + oaUrl + "', keySecret: K}\n"
            "  an: {kind: anthropic, baseUrl: '" + anUrl + "', keySecret: K}\n"
            "  demo: {kind: script, script: providers/replies.yaml}\n"
            "models:\n"
            "  m-oa: {provider: oa, id: test-model, contextWindow: 32768, pricing: {input: 2, output: 8, cacheRead: 0.5}}\n"
            "  m-an: {provider: an, id: test-model, contextWindow: 32768,\n"
            "         pricing: {input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75}}\n"
            "  demo: {provider: demo, contextWindow: 32768}\n");
  writeText(home + "/agents/alpha/agent.yaml", "description: talks to openai\nmodel: m-oa\n");
  writeText(home + "/agents/beta/agent.yaml", "description: talks to anthropic\nmodel: m-an\nbudget:\n  costPerDay: 0.01\n");
  writeText(home + "/agents/gamma/agent.yaml", "description: the script model, no pricing\n");
}

}  // namespace

TEST_CASE("usage: sums and costs per agent, day and task, cache prices included; a reached budget stops the next run") {
  FakeServer oa, an;
  oa.enqueue(openaiAnswer("first", 1500, 1000, 200));
  oa.enqueue(openaiAnswer("second", 800, 0, 50));
  an.enqueue(anthropicAnswer("one", 400, 2000, 1000, 100));
  an.enqueue(anthropicAnswer("two", 400, 2000, 1000, 100));
  TempDir dir;
  const std::string home = dir.path() + "/home";
  writeHome(home, oa.baseUrl() + "/v1", an.baseUrl());
  Pined p(home, {}, {});

  for (const char* text : {"a", "b"}) {
    json t = message(p, "alpha", text);
    CHECK_MESSAGE(t.value("state", "") == "done", t.dump());
  }
  for (const char* text : {"c", "d"}) {
    json t = message(p, "beta", text);
    CHECK_MESSAGE(t.value("state", "") == "done", t.dump());
  }
  // beta has now spent 2 x 0.00705 >= 0.01 (without the cache prices it would be 0.0054): stopped.
  json stopped = message(p, "beta", "e");
  CHECK(stopped.value("state", "") == "failed");
  CHECK_MESSAGE(contains(stopped.value("error", ""), "cost today 0.0141; the agent's budget.costPerDay is 0.01 "),
                stopped.dump());
  CHECK(an.requests().size() == 2);  // the stopped run never reached the provider
  CHECK(p.auditEvents("budget.stop").size() == 1);
  json g = message(p, "gamma", "say hello");
  CHECK_MESSAGE(g.value("state", "") == "done", g.dump());

  // By hand from the prices: alpha's first call had 1500 prompt tokens of which 1000 cached.
  const double alphaCost = (500 * kOaIn + 200 * kOaOut + 1000 * kOaCacheRead + 800 * kOaIn + 50 * kOaOut) / 1e6;
  const double betaCost = 2 * (400 * kAnIn + 100 * kAnOut + 2000 * kAnCacheRead + 1000 * kAnCacheWrite) / 1e6;
  REQUIRE(alphaCost == doctest::Approx(0.0051));
  REQUIRE(betaCost == doctest::Approx(0.0141));

  auto r = p.ctl({"usage", "--json"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  json u = json::parse(r.out, nullptr, false);
  REQUIRE(u.is_object());
  const json* alpha = agentRow(u, "alpha");
  const json* beta = agentRow(u, "beta");
  const json* gamma = agentRow(u, "gamma");
  REQUIRE(alpha);
  REQUIRE(beta);
  REQUIRE(gamma);
  CHECK((*alpha)["tasks"] == 2);
  CHECK((*alpha)["usage"]["input"] == 1300);
  CHECK((*alpha)["usage"]["output"] == 250);
  CHECK((*alpha)["usage"]["cacheRead"] == 1000);
  CHECK((*alpha)["usage"]["cacheWrite"] == 0);
  CHECK((*alpha)["usage"]["cost"].get<double>() == doctest::Approx(alphaCost));
  CHECK((*beta)["tasks"] == 3);  // the stopped one is a task that used nothing
  CHECK((*beta)["usage"]["input"] == 800);
  CHECK((*beta)["usage"]["output"] == 200);
  CHECK((*beta)["usage"]["cacheRead"] == 4000);
  CHECK((*beta)["usage"]["cacheWrite"] == 2000);
  CHECK((*beta)["usage"]["cost"].get<double>() == doctest::Approx(betaCost));
  // The script model has no pricing: its tokens count, its cost is unknown (null), and so is the total's.
  CHECK((*gamma)["usage"]["input"].get<long long>() > 0);
  CHECK((*gamma)["usage"]["cost"].is_null());
  CHECK((*gamma)["usage"]["unpricedTokens"].get<long long>() > 0);
  CHECK(u["total"]["usage"]["cost"].is_null());
  CHECK(u["total"]["usage"]["pricedCost"].get<double>() == doctest::Approx(alphaCost + betaCost));
  CHECK(u["total"]["tasks"] == 6);
  // Every task ran today: one day row per agent.
  REQUIRE(u["days"].size() == 3);
  for (const auto& d : u["days"]) CHECK(d["day"] == u["today"]);
  // Tasks that used a model, newest first: gamma's, beta's two, alpha's two.
  REQUIRE(u["tasks"].size() == 5);
  CHECK(u["tasksWithUsage"] == 5);
  CHECK(u["tasks"][0]["agent"] == "gamma");
  CHECK(u["tasks"][1]["usage"]["cacheWrite"] == 1000);
  CHECK(u["tasks"][4]["usage"]["cacheRead"] == 1000);
  CHECK(u["tasks"][4]["usage"]["cost"].get<double>() ==
        doctest::Approx((500 * kOaIn + 200 * kOaOut + 1000 * kOaCacheRead) / 1e6));
  // beta's budget: reached, with the full cost against the limit.
  REQUIRE(u["budgets"].size() == 1);
  const json& b = u["budgets"][0];
  CHECK(b["agent"] == "beta");
  CHECK(b["reached"] == true);
  CHECK(b["costPerDay"]["limit"].get<double>() == doctest::Approx(0.01));
  CHECK(b["costPerDay"]["used"].get<double>() == doctest::Approx(betaCost));
  CHECK(b["costPerDay"]["reached"] == true);

  // The table: each agent's row with its sums and cost, gamma's cost unknown, the budget reached.
  auto table = p.ctl({"usage"});
  REQUIRE_MESSAGE(table.exitCode == 0, table.err);
  const std::string& out = table.out;
  CHECK_MESSAGE(contains(out, "costs are estimates from models.yaml pricing"), out);
  CHECK_MESSAGE(contains(out, "alpha              2        1300       250        1000           0  0.0051"), out);
  CHECK_MESSAGE(contains(out, "beta               3         800       200        4000        2000  0.0141"), out);
  CHECK_MESSAGE(contains(out, "  unknown\n"), out);  // gamma
  CHECK_MESSAGE(contains(out, "unknown (0.0192 priced)"), out);  // the total
  CHECK_MESSAGE(contains(out, "beta: REACHED, its runs are stopped until tomorrow"), out);
  CHECK_MESSAGE(contains(out, "costPerDay    0.0141 of 0.0100  REACHED"), out);
  CHECK_MESSAGE(contains(out, "most recent tasks (5 of 5 that used a model"), out);

  // Filtered by agent: alpha alone, no budget of its own; -n bounds the task list.
  auto onlyAlpha = p.ctl({"usage", "--agent", "alpha", "-n", "1", "--json"});
  REQUIRE_MESSAGE(onlyAlpha.exitCode == 0, onlyAlpha.err);
  json a = json::parse(onlyAlpha.out, nullptr, false);
  REQUIRE(a.is_object());
  REQUIRE(a["agents"].size() == 1);
  CHECK(a["total"]["usage"]["cost"].get<double>() == doctest::Approx(alphaCost));
  CHECK(a["tasks"].size() == 1);
  CHECK(a["tasksWithUsage"] == 2);
  CHECK(a["budgets"].empty());

  // Since today: the same; since tomorrow: nothing yet.
  auto today = json::parse(p.ctl({"usage", "--since", "today", "--json"}).out, nullptr, false);
  REQUIRE(today.is_object());
  CHECK(today["total"]["tasks"] == 6);
  auto later = json::parse(p.ctl({"usage", "--since", "2099-01-01T00:00:00Z", "--json"}).out, nullptr, false);
  REQUIRE(later.is_object());
  CHECK(later["total"]["tasks"] == 0);
  CHECK(later["total"]["usage"]["cost"] == 0);
  CHECK(later["budgets"].size() == 1);  // budgets are today's, whatever since says

  // A --since pine cannot read: exit 2 with the forms it takes. An unknown agent: exit 1 naming them.
  for (const char* bad : {"2026-13-01", "yesterday-ish", "2026-02-30", "2026-12-03T25:00"}) {
    auto e = p.ctl({"usage", "--since", bad});
    CHECK_MESSAGE(e.exitCode == 2, bad, " ", e.err);
    CHECK_MESSAGE(contains(e.err, "since"), e.err);
    CHECK_MESSAGE((contains(e.err, "YYYY-MM-DD") || contains(e.err, "no such day")), e.err);
  }
  auto nobody = p.ctl({"usage", "--agent", "nobody"});
  CHECK(nobody.exitCode == 1);
  CHECK_MESSAGE(contains(nobody.err, "no agent 'nobody'; the agents are: alpha, beta, gamma"), nobody.err);
  auto by = p.api("GET", "/v1/usage?by=week");
  CHECK(by.status == 400);
  CHECK_MESSAGE(contains(by.body, "use agent, day or task"), by.body);
  auto onlyDays = p.api("GET", "/v1/usage?by=day").json();
  CHECK(onlyDays.contains("days"));
  CHECK_FALSE(onlyDays.contains("tasks"));
  CHECK(p.api("POST", "/v1/usage").status == 405);
}
