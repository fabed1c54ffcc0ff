// sourcesReport (pinectl sources): each state a source can be in, who wants it, its status line.
#include <doctest/doctest.h>

#include "broker/sources_report.h"

using namespace pine;

namespace {

config::Source source(const std::string& name, const std::string& type) {
  config::Source s;
  s.name = name;
  s.type = type;
  return s;
}

nlohmann::json entry(const nlohmann::json& report, const std::string& name) {
  for (auto& s : report["sources"])
    if (s["name"] == name) return s;
  return nullptr;
}

}  // namespace

TEST_CASE("sourcesReport: running, not running with the reason, idle, listening, a channel's state") {
  config::Home home;
  home.pine.sources = {source("run", "mqtt"), source("broken", "http"), source("idle", "folder"),
                       source("hook", "webhook"), source("tg", "telegram"), source("tg2", "telegram"),
                       source("always", "command")};
  home.pine.sources.back().start = config::SourceStart::Always;
  home.pine.sources[0].trust = config::Trust::Owner;
  home.pine.sources[0].agent = "main";
  config::Route route;
  route.name = "r1";
  route.source = "broken";
  route.agent = "main";
  home.pine.routes = {route};
  config::Webhook wh;
  wh.name = "gh";
  home.pine.webhooks = {wh};

  SourceFacts f;
  f.running = {"run"};
  f.notRunning = {{"broken", "connection refused"}};
  f.channels = {{"tg", "polling"}};
  store::SubscriptionRow sub;
  sub.id = "s1";
  sub.agent = "main";
  sub.session = "house";
  sub.source = "run";
  f.subscriptions = {sub};
  store::SourceStatusRow st;
  st.source = "run";
  st.lookedMs = 1000;
  st.found = "42";
  st.eventMs = 2000;
  st.events = 7;
  st.errors = 1;
  st.errorMs = 1500;
  st.error = "timed out";
  f.status["run"] = st;

  auto r = sourcesReport(home, f);
  REQUIRE(r["sources"].size() == 8);  // seven sources and the webhook
  auto run = entry(r, "run");
  CHECK(run["state"] == "running");
  CHECK(run["trust"] == "owner");
  CHECK(run["agent"] == "main");
  CHECK(run["found"] == "42");
  CHECK(run["events"] == 7);
  CHECK(run["errors"] == 1);
  CHECK(run["lastError"] == "timed out");
  CHECK(run.contains("lastLookAt"));
  CHECK(run.contains("lastEventAt"));
  REQUIRE(run["wantedBy"].size() == 1);
  CHECK(run["wantedBy"][0]["subscription"] == "s1");
  CHECK(run["wantedBy"][0]["session"] == "house");

  auto broken = entry(r, "broken");
  CHECK(broken["state"] == "not running");
  CHECK(broken["why"] == "connection refused");
  CHECK(broken["wantedBy"][0]["route"] == "r1");
  CHECK(broken["events"] == 0);
  CHECK_FALSE(broken.contains("found"));

  CHECK(entry(r, "idle")["state"] == "idle");
  CHECK(entry(r, "hook")["state"] == "listening");
  CHECK(entry(r, "gh")["state"] == "listening");
  CHECK(entry(r, "gh")["type"] == "webhook");
  CHECK(entry(r, "tg")["state"] == "polling");
  CHECK(entry(r, "tg2")["state"] == "not running");
  auto always = entry(r, "always");
  CHECK(always["state"] == "starting");  // wanted, neither running nor refused yet
  CHECK(always["wantedBy"][0]["start"] == "always");
}
