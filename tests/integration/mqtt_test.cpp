// MQTT with a login through the real process tree: pined reads the password from .env and
// hands it to a pine-mqtt of the source's own (openMqtt); messages become events in the
// broker. The password is in pine-mqtt's memory and in no broker's memory, command line or
// environment, in no log, audit line or database.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/harness.h"
#include "tests/sources/mosquitto_fixture.h"

using namespace pine::test;
using namespace std::chrono_literals;

namespace mqtt_it {
namespace {

// The processes of this build that run `program` (not the sandbox's monitors, not another tree's).
std::vector<pid_t> running(const std::string& program) {
  std::vector<pid_t> out;
  const std::string want = std::filesystem::canonical(binDir() + "/" + program).string();
  for (pid_t p : processesMentioning(program)) {
    std::error_code ec;
    if (std::filesystem::read_symlink("/proc/" + std::to_string(p) + "/exe", ec).string() == want) out.push_back(p);
  }
  return out;
}

}  // namespace
}  // namespace mqtt_it

TEST_CASE("mqtt: the login from .env reaches only pine-mqtt; events arrive; the broker never holds the password") {
  using namespace mqtt_it;
  const std::string user = "pine-it", password = "it-mqtt-password-93f1c07a2b";
  sources_test::Mosquitto mosquitto({user, password, false});
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  REQUIRE(pined.ctl({"secret", "set", "MQTT_USER"}, user + "\n").exitCode == 0);
  REQUIRE(pined.ctl({"secret", "set", "MQTT_PASSWORD"}, password + "\n").exitCode == 0);
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "sources:\n  - {name: house, type: mqtt, url: \"" << mosquitto.url()
      << "\", topics: [\"house/#\"], usernameSecret: MQTT_USER, passwordSecret: MQTT_PASSWORD, start: always}\n";
  auto r = pined.ctl({"reload"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);

  sources_test::Client client(mosquitto.port(), {}, user, password);
  bool arrived = waitUntil([&] {
    client.publish("house/door", R"({"open": true})");
    auto events = pined.api("GET", "/v1/events?topic=house/door").json();
    return events.is_object() && events["events"].is_array() && !events["events"].empty();
  }, 20s);
  REQUIRE_MESSAGE(arrived, tailOf(pined.stderrText(), 4000));
  auto events = pined.api("GET", "/v1/events?topic=house/door").json();
  CHECK(events["events"][0]["source"] == "house");
  CHECK(events["events"][0]["trust"] == "untrusted");
  CHECK(events["events"][0]["payload"]["open"] == true);
  CHECK(pined.auditEvents("mqtt.start").size() == 1);
  // A device that echoes the login (its configuration, in a payload and in a topic): the event
  // says [redacted], its JSON still JSON; the broker never receives the value (the memory scan
  // below). Before, both went into the event and the database as they came.
  // Also: the password written with a JSON escape (what the broker stores is decoded), and a message
  // too large to be an event on a topic holding it (dropped, and the drop is said in the log).
  // Before, both reached the broker: the escaped one into pine.db, the topic into broker.log.
  std::string escaped = password;
  escaped.replace(escaped.find('-'), 1, "\\u002d");
  bool echoed = waitUntil([&] {
    client.publish("house/echo", R"({"config": {"user": ")" + user + R"(", "password": ")" + password + R"("}, "n": 1})");
    client.publish("house/" + password, "plain " + password);
    client.publish("house/escaped", R"({"p": ")" + escaped + R"("})");
    client.publish("house/bom", "\xef\xbb\xbf\"" + escaped + "\"");  // a byte-order mark, then one JSON string
    client.publish("house/" + password + "/big", std::string(300 * 1024, 'x'));
    auto a = pined.api("GET", "/v1/events?topic=house/echo").json(), b = pined.api("GET", "/v1/events?topic=house/%23").json();
    return a.is_object() && !a["events"].empty() && b.is_object() && b["events"].size() >= 5 &&
           readText(home + "/data/logs/broker.log").find("dropped a message of") != std::string::npos;
  }, 20s);
  REQUIRE(echoed);
  auto echo = pined.api("GET", "/v1/events?topic=house/echo").json()["events"][0]["payload"];
  CHECK(echo["config"]["password"] == "[redacted]");
  CHECK(echo["n"] == 1);
  bool topicRedacted = false;
  const auto all = pined.api("GET", "/v1/events?topic=house/%23").json();
  for (auto& e : all["events"]) {
    CHECK(e.dump().find(password) == std::string::npos);
    topicRedacted |= e["topic"] == "house/[redacted]" && e["payload"] == "plain [redacted]";
  }
  CHECK(topicRedacted);
  auto esc = pined.api("GET", "/v1/events?topic=house/escaped").json()["events"];
  REQUIRE(!esc.empty());
  CHECK(esc[0]["payload"]["p"] == "[redacted]");
  auto bom = pined.api("GET", "/v1/events?topic=house/bom").json()["events"];
  REQUIRE(!bom.empty());
  CHECK(bom[0]["payload"] == "[redacted]");

  auto connectors = running("pine-mqtt");
  auto brokers = running("pine-broker");
  REQUIRE(connectors.size() == 1);
  REQUIRE(brokers.size() >= 1);
  size_t scanned = 0;
  // The connector holds it (so the scan can find it), with nothing of it in its environment or command line.
  CHECK(countInMemory(connectors[0], {password}, &scanned)[0] >= 1);
  CHECK(scanned > 0);
  CHECK(readText("/proc/" + std::to_string(connectors[0]) + "/environ").find(password) == std::string::npos);
  CHECK(readText("/proc/" + std::to_string(connectors[0]) + "/cmdline") ==
        std::filesystem::canonical(binDir() + "/pine-mqtt").string() + std::string(1, '\0'));
  for (pid_t b : brokers) {
    CAPTURE(b);
    scanned = 0;
    CHECK(countInMemory(b, {password}, &scanned)[0] == 0);
    CHECK(scanned > 0);
    CHECK(readText("/proc/" + std::to_string(b) + "/environ").find(password) == std::string::npos);
    CHECK(readText("/proc/" + std::to_string(b) + "/cmdline").find(password) == std::string::npos);
  }

  pined.stop();
  for (auto& e : std::filesystem::recursive_directory_iterator(home + "/data"))  // logs, audit log, database
    if (e.is_regular_file()) CHECK_MESSAGE(readText(e.path()).find(password) == std::string::npos, e.path());
  CHECK(pined.stderrText().find(password) == std::string::npos);
}

TEST_CASE("mqtt: a wrong password is said in the broker's log, retried with backoff, never written") {
  const std::string user = "pine-it";
  sources_test::Mosquitto mosquitto({user, "the-right-password-4711", false});
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  REQUIRE(pined.ctl({"secret", "set", "MQTT_USER"}, user + "\n").exitCode == 0);
  REQUIRE(pined.ctl({"secret", "set", "MQTT_PASSWORD"}, "a-wrong-password-0815\n").exitCode == 0);
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "sources:\n  - {name: house, type: mqtt, url: \"" << mosquitto.url()
      << "\", topics: [\"house/#\"], usernameSecret: MQTT_USER, passwordSecret: MQTT_PASSWORD, start: always}\n";
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  bool said = waitUntil([&] { return contains(pined.stderrText(), "the MQTT server refused the login"); }, 20s);
  CHECK_MESSAGE(said, tailOf(pined.stderrText(), 3000));
  CHECK(contains(pined.stderrText(), "usernameSecret and passwordSecret"));
  // The right password set: its connector starts again with it, and messages arrive (before, the
  // one running kept the wrong password until pined restarted).
  REQUIRE(pined.ctl({"secret", "set", "MQTT_PASSWORD"}, "the-right-password-4711\n").exitCode == 0);
  sources_test::Client client(mosquitto.port(), {}, user, "the-right-password-4711");
  bool arrived = waitUntil([&] {
    client.publish("house/fixed", "1");
    auto events = pined.api("GET", "/v1/events?topic=house/fixed").json();
    return events.is_object() && events["events"].is_array() && !events["events"].empty();
  }, 30s);
  CHECK_MESSAGE(arrived, tailOf(pined.stderrText(), 3000));
  CHECK(pined.auditEvents("mqtt.restart").size() == 1);
  pined.stop();
  CHECK_FALSE(contains(pined.stderrText(), "a-wrong-password-0815"));
  CHECK_FALSE(contains(pined.stderrText(), "the-right-password-4711"));
}
