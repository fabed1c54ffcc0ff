// pinectl sources / subscriptions / subscribe / unsubscribe against the real process tree: every
// source is listed with its state and who wants it, the owner's subscription starts a source
// nobody wanted and delivers its events into the conversation as outside content, and each
// wrong request is refused with what exists.
#include <doctest/doctest.h>

#include <fstream>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace {

nlohmann::json sourceNamed(Pined& p, const std::string& name) {
  auto r = p.ctl({"sources", "--json"});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded()) return nullptr;
  for (auto& s : j["sources"])
    if (s["name"] == name) return s;
  return nullptr;
}

void addSources(Pined& p) {
  std::ofstream(p.home() + "/pine.yaml", std::ios::app)
      << "\nsources:\n"
         "  - {name: bell, type: webhook, topic: door/bell, open: true}\n"
         "  - {name: sensors, type: mqtt, url: 'mqtt://127.0.0.1:1', topics: ['home/#']}\n"
         "  - {name: mine, type: mqtt, url: 'mqtt://127.0.0.1:1', topics: ['x/#'], agent: other}\n";
  auto r = p.ctl({"reload"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
}

}  // namespace

TEST_CASE("pinectl sources: every source with its state; subscribing starts one; unsubscribing stops it") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home, {}, {"main", "other"});
  addSources(pined);

  auto sensors = sourceNamed(pined, "sensors");
  REQUIRE(sensors.is_object());
  CHECK(sensors["state"] == "idle");  // nobody wants it: not running
  CHECK(contains(sensors["why"].get<std::string>(), "pinectl subscribe"));
  CHECK(sensors["wantedBy"].empty());
  CHECK(sensors["trust"] == "untrusted");
  CHECK(sourceNamed(pined, "bell")["state"] == "listening");
  CHECK(sourceNamed(pined, "mine")["agent"] == "other");

  auto sub = pined.ctl({"subscribe", "main", "sensors", "--topic", "home/+/temp", "--json"});
  REQUIRE_MESSAGE(sub.exitCode == 0, sub.err);
  auto row = nlohmann::json::parse(sub.out)["subscription"];
  std::string id = row["id"];
  CHECK(row["session"] == "main");
  CHECK(row["topic"] == "home/+/temp");
  auto again = pined.ctl({"subscribe", "main", "sensors", "--topic", "home/+/temp"});
  CHECK(again.exitCode == 0);
  CHECK(contains(again.out, "already subscribed (" + id + ")"));  // not a second subscription

  sensors = sourceNamed(pined, "sensors");
  CHECK(sensors["state"] != "idle");  // wanted now: running, or not running with the reason
  REQUIRE(sensors["wantedBy"].size() == 1);
  CHECK(sensors["wantedBy"][0]["subscription"] == id);
  auto human = pined.ctl({"sources"});
  CHECK(contains(human.out, "sensors (mqtt, untrusted)"));
  CHECK(contains(human.out, "wanted by: subscription " + id + " (main/main)"));

  auto list = pined.ctl({"subscriptions"});
  CHECK(contains(list.out, id + "  main/main  hears sensors (topic home/+/temp)"));
  // pinectl status says it all in one place: what waits, what runs and why not, who hears what.
  auto status = pined.ctl({"status"});
  CHECK(contains(status.out, "0 approvals wait for you"));
  CHECK_MESSAGE(contains(status.out, "\nsources\n  bell (webhook)  listening; last event never\n"), status.out);
  // Its state may have moved on since it was read above (a connection refused meanwhile).
  CHECK_MESSAGE((contains(status.out, "  sensors (mqtt)  running") || contains(status.out, "  sensors (mqtt)  not running: ") ||
                 contains(status.out, "  sensors (mqtt)  starting")),
                status.out);
  CHECK_MESSAGE(contains(status.out, "conversations and what they hear\n  main/main: sensors (home/+/temp)\n"), status.out);
  auto statusJson = nlohmann::json::parse(pined.ctl({"status", "--json"}).out, nullptr, false);
  REQUIRE(statusJson.is_object());
  CHECK(statusJson["sources"].size() == 3);
  CHECK(statusJson["subscriptions"].size() == 1);
  CHECK(statusJson["approvals"].empty());
  CHECK(statusJson.contains("processes"));
  CHECK_FALSE(statusJson.contains("unavailable"));
  CHECK(pined.auditJson("subscription.add").size() == 1);

  auto un = pined.ctl({"unsubscribe", id});
  CHECK(un.exitCode == 0);
  CHECK(sourceNamed(pined, "sensors")["state"] == "idle");
  CHECK(contains(pined.ctl({"subscriptions"}).out, "no subscriptions"));
  auto twice = pined.ctl({"unsubscribe", id});
  CHECK(twice.exitCode == 1);
  CHECK(contains(twice.err, "no subscription '" + id + "'"));
}

TEST_CASE("pinectl subscribe: what does not exist or is not the agent's is refused, naming what exists") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home, {}, {"main", "other"});
  addSources(pined);
  auto noAgent = pined.ctl({"subscribe", "nobody", "sensors"});
  CHECK(noAgent.exitCode == 1);
  CHECK(contains(noAgent.err, "no agent 'nobody'; the agents are: main, other"));
  auto noSource = pined.ctl({"subscribe", "main", "nothing"});
  CHECK(noSource.exitCode == 1);
  CHECK(contains(noSource.err, "no source 'nothing' in pine.yaml; the sources are: bell, sensors, mine"));
  auto notMine = pined.ctl({"subscribe", "main", "mine"});
  CHECK(notMine.exitCode == 1);
  CHECK(contains(notMine.err, "belongs to agent other, not main"));
  auto badTopic = pined.ctl({"subscribe", "main", "sensors", "--topic", "home/#/x"});
  CHECK(badTopic.exitCode == 1);
  CHECK(contains(badTopic.err, "\"topic\""));
  auto badSession = pined.ctl({"subscribe", "main/main~u", "sensors"});
  CHECK(badSession.exitCode == 1);
  CHECK(contains(badSession.err, "\"session\""));
  CHECK(pined.ctl({"subscriptions", "--json"}).out.find("\"id\"") == std::string::npos);  // nothing was added
  // The legitimate twin: another conversation of the same agent.
  CHECK(pined.ctl({"subscribe", "main/house", "sensors"}).exitCode == 0);
}

TEST_CASE("an owner's subscription delivers a source's events into the conversation as outside content") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home, {}, {"main", "other"});
  addSources(pined);
  REQUIRE(pined.ctl({"subscribe", "main/porch", "bell"}).exitCode == 0);
  CHECK_FALSE(sessionTainted(pined, "main", "porch"));
  auto hook = pined.api("POST", "/hooks/bell", R"({"who":"courier"})");
  REQUIRE_MESSAGE(hook.status == 202, hook.body);
  REQUIRE(waitUntil([&] { return sessionTainted(pined, "main", "porch"); }, 20s));
  REQUIRE(waitUntil([&] { return sourceNamed(pined, "bell")["events"] == 1; }, 10s));
  auto bell = sourceNamed(pined, "bell");
  CHECK(bell.contains("lastEventAt"));
  CHECK(bell["errors"] == 0);
}

TEST_CASE("a source that leaves the configuration is forgotten: its status line goes, the others' stay") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home, {}, {"main"});
  const std::string base = readText(home + "/pine.yaml");
  auto configure = [&](const std::string& sources) {
    writeText(home + "/pine.yaml", base + "\nsources:\n" + sources);
    auto r = pined.ctl({"reload"});
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  };
  configure("  - {name: bell, type: webhook, topic: door/bell, open: true}\n"
            "  - {name: door, type: webhook, topic: door/open, open: true}\n");
  REQUIRE(waitUntil([&] { return postHook(home, "bell", "{}", {}) == 202; }, 10s));
  REQUIRE(postHook(home, "door", "{}", {}) == 202);
  // The broker writes its counts every few seconds.
  REQUIRE(waitUntil([&] { return sourceStatus(home, "bell").events == 1 && sourceStatus(home, "door").events == 1; }, 15s));

  configure("  - {name: door, type: webhook, topic: door/open, open: true}\n");
  CHECK(waitUntil([&] { return sourceStatus(home, "bell").events == 0; }, 10s));
  CHECK(sourceStatus(home, "door").events == 1);  // still configured: kept
  CHECK(waitUntil([&] { return contains(readText(home + "/data/logs/broker.log"), "source 'bell': no longer configured"); }, 5s));
  // Added again, it starts afresh.
  configure("  - {name: bell, type: webhook, topic: door/bell, open: true}\n"
            "  - {name: door, type: webhook, topic: door/open, open: true}\n");
  CHECK(sourceNamed(pined, "bell")["events"] == 0);
}
