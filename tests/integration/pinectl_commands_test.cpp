// pinectl's commands for a person and a script (issue 17 point 4) against the real process tree:
// agents, publish, send --session, check --json, options after the command, an unknown command
// named with a suggestion, --version of every program, and stop.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

TEST_CASE("pinectl agents, publish, send --session and check --json answer people and scripts; stop stops pined") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home, {}, {"main", "ops"});

  // Options after the command, as after pinectl itself.
  auto agents = run({binDir() + "/pinectl", "agents", "--json", "--home", home});
  REQUIRE_MESSAGE(agents.exitCode == 0, agents.err);
  auto list = nlohmann::json::parse(agents.out, nullptr, false);
  REQUIRE(list.is_object());
  REQUIRE(list["agents"].size() == 2);
  auto text = pined.ctl({"agents"});
  CHECK_MESSAGE(contains(text.out, "main  mode "), text.out);
  CHECK_MESSAGE(contains(text.out, "ops  mode "), text.out);

  // publish: the owner's event, committed, with its seq; pine's own topics and non-JSON refused.
  auto pub = pined.ctl({"publish", "home/door", R"({"open": true})", "--json"});
  REQUIRE_MESSAGE(pub.exitCode == 0, pub.err);
  auto ev = nlohmann::json::parse(pub.out)["event"];
  CHECK(ev["topic"] == "home/door");
  CHECK(ev["trust"] == "owner");
  CHECK(ev["payload"]["open"] == true);
  CHECK(topicEvents(pined, "home/door").size() == 1);
  auto reserved = pined.ctl({"publish", "pine/restart", "{}"});
  CHECK(reserved.exitCode == 1);
  CHECK_MESSAGE(!reserved.err.empty(), reserved.out);
  auto notJson = pined.ctl({"publish", "home/door", "open"});
  CHECK(notJson.exitCode == 2);
  CHECK(contains(notJson.err, "not JSON"));
  CHECK(topicEvents(pined, "home/door").size() == 1);  // neither refused one was added

  // send --session: the task runs in that conversation, and so does AGENT/SESSION.
  auto sent = pined.ctl({"send", "main", "hello", "--session", "garden", "--json"});
  REQUIRE_MESSAGE(sent.exitCode == 0, sent.err);
  CHECK(nlohmann::json::parse(sent.out)["session"] == "garden");
  auto slash = pined.ctl({"send", "ops/night", "hello", "--json"});
  REQUIRE_MESSAGE(slash.exitCode == 0, slash.err);
  CHECK(nlohmann::json::parse(slash.out)["session"] == "night");
  auto badSession = pined.ctl({"send", "main", "hello", "--session", "a b"});
  CHECK(badSession.exitCode == 1);
  CHECK(contains(badSession.err, "session"));

  // check --json: valid, its notes as objects; an invalid home is exit 2 with file:line in each error.
  auto check = pined.ctl({"check", "--json"});
  auto c = nlohmann::json::parse(check.out, nullptr, false);
  REQUIRE_MESSAGE(c.is_object(), (check.out + check.err));
  CHECK(c["valid"] == true);
  CHECK(check.exitCode == (c["notes"].empty() && !c.contains("running") ? 0 : 1));
  TempDir bad;
  writeMinimalConfig(bad.path() + "/home", {"main"});
  writeText(bad.path() + "/home/pine.yaml", "defaults:\n  model: demo\n  modde: auto\n");
  auto invalid = run({binDir() + "/pinectl", "--home", bad.path() + "/home", "check", "--json"});
  CHECK(invalid.exitCode == 2);
  auto inv = nlohmann::json::parse(invalid.out, nullptr, false);
  REQUIRE(inv.is_object());
  CHECK(inv["valid"] == false);
  REQUIRE(!inv["errors"].empty());
  CHECK(inv["errors"][0]["line"] == 3);
  CHECK(contains(inv["errors"][0]["file"].get<std::string>(), "pine.yaml"));

  // An unknown command is named, with the nearest one; exit 2.
  auto typo = pined.ctl({"stauts"});
  CHECK(typo.exitCode == 2);
  CHECK_MESSAGE(contains(typo.err, "no command 'stauts'; did you mean 'status'?"), typo.err);

  // Every program says its version.
  for (std::string program : {"pined", "pinectl", "pine-broker", "pine-worker", "pine-egress", "pine-mqtt",
                              "pine-mcp-remote", "pine-web", "pine-browser", "pine-launch", "pine-checkpoint"}) {
    auto v = run({binDir() + "/" + program, "--version"});
    CHECK_MESSAGE(v.exitCode == 0, program);
    CHECK_MESSAGE(v.out.rfind(program + " 0.", 0) == 0, v.out);
  }

  // stop: pined stops cleanly (exit 0), audited, and pinectl waits until it has.
  auto stop = pined.ctl({"stop"});
  CHECK_MESSAGE(stop.exitCode == 0, stop.err);
  CHECK(contains(stop.out, "pined stopped"));
  CHECK(pined.auditEvents("pined.stop").size() == 1);
  int status = pined.stop();
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  auto after = pined.ctl({"stop"});
  CHECK(after.exitCode == 1);
  CHECK_MESSAGE(contains(after.err, "pined is not running"), after.err);
}

TEST_CASE("pined detached says in one line that it started, and on stderr what the broker could not do; status "
          "and check name a port in use") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  // Someone else holds the control API's port.
  int holder = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(holder >= 0);
  struct sockaddr_in addr {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(bind(holder, (struct sockaddr*)&addr, sizeof addr) == 0);
  REQUIRE(listen(holder, 1) == 0);
  REQUIRE(getsockname(holder, (struct sockaddr*)&addr, &len) == 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  writeMinimalConfig(home, {"main"});
  // And an MQTT server that is not there.
  const std::string nobody = std::to_string(freeTcpPort());
  writeText(home + "/pine.yaml", "defaults:\n  model: demo\nhttp:\n  port: " + port +
                                     "\nsources:\n  - {name: house, type: mqtt, url: \"mqtt://127.0.0.1:" + nobody +
                                     "\", topics: [\"house/#\"], start: always}\n");

  std::vector<std::string> argv = {binDir() + "/pined", "--home", home};
  if (seatbeltStandIn())
    argv.insert(argv.end(), {"--sandbox-backend", "seatbelt", "--sandbox-exec", testBinDir() + "/fixtures/sandbox-exec"});
  auto started = run(argv);
  CHECK_MESSAGE(started.exitCode == 0, started.err);
  CHECK_MESSAGE(started.out.rfind("pined started on " + home + " (pid ", 0) == 0, started.out);
  CHECK_MESSAGE(std::count(started.out.begin(), started.out.end(), '\n') == 1, started.out);
  CHECK_MESSAGE(contains(started.err, "pined: the control API cannot listen on 127.0.0.1:" + port + ": "), started.err);
  CHECK_MESSAGE(contains(started.err, "change http.port in pine.yaml"), started.err);
  CHECK_MESSAGE(contains(started.err, "pined: source 'house'"), started.err);
  CHECK_MESSAGE(contains(started.err, "cannot reach the MQTT server"), started.err);
  CHECK_MESSAGE(contains(started.err, ":" + port + ": Address already in use; "), started.err);  // no code in it

  auto ctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {binDir() + "/pinectl", "--home", home});
    return run(args);
  };
  auto status = ctl({"status"});
  CHECK_MESSAGE(status.exitCode == 0, status.err);  // the unix socket still serves
  CHECK_MESSAGE(contains(status.out, "  not over TCP: the control API cannot listen on 127.0.0.1:" + port), status.out);
  auto check = ctl({"check"});
  CHECK(check.exitCode == 1);
  CHECK_MESSAGE(contains(check.out, "running pine: the control API cannot listen on 127.0.0.1:" + port), check.out);
  CHECK(ctl({"stop"}).exitCode == 0);
  close(holder);
}

TEST_CASE("pined detached whose broker cannot start says why on stderr, not only in its log, and keeps trying") {
  if (geteuid() != 0 || seatbeltStandIn()) return;  // as root the broker has a uid of its own, which the folder shuts out
  TempDir dir;
  const std::string shut = dir.path() + "/shut";
  const std::string home = shut + "/home";
  writeMinimalConfig(home, {"main"});
  REQUIRE(chmod(shut.c_str(), 0700) == 0);  // the broker's uid cannot pass
  auto started = run({binDir() + "/pined", "--home", home});
  CHECK(started.exitCode == 1);
  CHECK_MESSAGE(contains(started.err, "pined: the broker's sandbox could not be built: "), started.err);
  CHECK_MESSAGE(contains(started.err, shut + " is not traversable by uid "), started.err);
  CHECK_MESSAGE(contains(started.err, "pined: still trying, with backoff"), started.err);
  // Legitimate twin: once the folder lets it pass, the same pined's broker starts.
  REQUIRE(chmod(shut.c_str(), 0711) == 0);
  auto ctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {binDir() + "/pinectl", "--home", home});
    return run(args);
  };
  CHECK(waitUntil([&] { return ctl({"status"}).exitCode == 0; }, 60s));
  CHECK(ctl({"stop"}).exitCode == 0);
}

TEST_CASE("pinectl secret unset: a secret the configuration uses is kept unless forced, saying where; an unused one goes") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  REQUIRE(pined.ctl({"secret", "set", "DOOR_HOOK"}, "a-long-webhook-secret-0123456789\n").exitCode == 0);
  REQUIRE(pined.ctl({"secret", "set", "SPARE_KEY"}, "spare-value-42\n").exitCode == 0);
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") +
                                     "sources:\n  - {name: door, type: webhook, topic: door/bell, secret: DOOR_HOOK}\n");
  auto reload = pined.ctl({"reload"});
  REQUIRE_MESSAGE(reload.exitCode == 0, reload.err);

  auto refused = pined.ctl({"secret", "unset", "DOOR_HOOK"});  // stdin is not a terminal: no question
  CHECK(refused.exitCode == 1);
  CHECK_MESSAGE(contains(refused.err, "the configuration uses DOOR_HOOK (pine.yaml:"), refused.err);
  CHECK_MESSAGE(contains(refused.err, "pinectl secret unset DOOR_HOOK --force"), refused.err);
  CHECK(contains(pined.ctl({"secret", "list"}).out, "DOOR_HOOK"));
  CHECK(pined.auditEvents("secret.unset").empty());

  CHECK(pined.ctl({"secret", "unset", "SPARE_KEY"}).exitCode == 0);  // the twin: nothing names it
  auto forced = pined.ctl({"secret", "unset", "DOOR_HOOK", "--force"});
  CHECK_MESSAGE(forced.exitCode == 0, forced.err);
  CHECK(pined.ctl({"secret", "list"}).out.empty());
  CHECK(pined.auditEvents("secret.unset").size() == 2);
}

TEST_CASE("pinectl secret set refuses a value too short for the webhook that uses it, running or not; a long one is stored") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  REQUIRE(pined.ctl({"secret", "set", "DOOR_HOOK"}, "a-long-webhook-secret-0123456789\n").exitCode == 0);
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") +
                                     "sources:\n  - {name: door, type: webhook, topic: door/bell, secret: DOOR_HOOK}\n");
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  const std::string env = readText(home + "/.env");
  auto shortOne = pined.ctl({"secret", "set", "DOOR_HOOK"}, "tiny\n");
  CHECK(shortOne.exitCode != 0);
  CHECK_MESSAGE(contains(shortOne.err, "not stored; .env is unchanged: pine.yaml:"), shortOne.err);
  CHECK_MESSAGE(contains(shortOne.err, "shorter than 16 bytes"), shortOne.err);
  CHECK(readText(home + "/.env") == env);
  // The hook still takes the secret it had.
  CHECK(postHook(home, "door", R"({"ring": 1})", {"Authorization: Bearer a-long-webhook-secret-0123456789"}) == 202);
  // The twin: a long new value is stored, and a name no hook uses may be short.
  CHECK(pined.ctl({"secret", "set", "DOOR_HOOK"}, "another-long-secret-9876543210\n").exitCode == 0);
  CHECK(pined.ctl({"secret", "set", "SHORT_PIN"}, "1234\n").exitCode == 0);
  // With pined stopped, pined --set-secret applies the same rule.
  CHECK(WIFEXITED(pined.stop()));
  const std::string env2 = readText(home + "/.env");
  auto offline = pined.ctl({"secret", "set", "DOOR_HOOK"}, "tiny\n");
  CHECK(offline.exitCode != 0);
  CHECK_MESSAGE(contains(offline.err, "shorter than 16 bytes"), offline.err);
  CHECK(readText(home + "/.env") == env2);
}

TEST_CASE("pinectl check and reload quote a bad line with its .env value redacted, and still say what and where") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  REQUIRE(pined.ctl({"secret", "set", "SPARE_KEY"}, "OtherSecretValue99\n").exitCode == 0);
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);  // pined's redactor learns the new value
  const std::string good = readText(home + "/pine.yaml");
  // The owner pasted the value where a type goes, and into a topic.
  writeText(home + "/pine.yaml", good + "sources:\n  - {name: door, type: OtherSecretValue99, topic: door/bell}\n");
  auto check = pined.ctl({"check"});
  CHECK(check.exitCode == 2);
  CHECK_FALSE(contains(check.out + check.err, "OtherSecretValue99"));
  CHECK_MESSAGE(contains(check.out, "pine.yaml:"), check.out);
  CHECK_MESSAGE(contains(check.out, "unknown source type '[redacted]'"), check.out);
  auto json = pined.ctl({"check", "--json"});
  CHECK_FALSE(contains(json.out, "OtherSecretValue99"));
  CHECK(nlohmann::json::parse(json.out, nullptr, false)["valid"] == false);
  auto reload = pined.ctl({"reload"});
  CHECK(reload.exitCode == 2);
  CHECK_FALSE(contains(reload.out + reload.err, "OtherSecretValue99"));
  CHECK_MESSAGE(contains(reload.err, "unknown source type '[redacted]'"), reload.err);
  // The twin: a wrong type that is no secret is quoted as it is.
  writeText(home + "/pine.yaml", good + "sources:\n  - {name: door, type: webhok, topic: door/bell}\n");
  CHECK(contains(pined.ctl({"check"}).out, "unknown source type 'webhok'"));
  CHECK(contains(pined.ctl({"reload"}).err, "unknown source type 'webhok'"));
}

TEST_CASE("pinectl secret set while pined is down: stored with pined's rules, and pined then starts with the "
          "configuration that names it; never behind a running pined's back") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  writeText(home + "/pine.yaml", readText(home + "/pine.yaml") +
                                     "sources:\n  - {name: door, type: webhook, topic: door/bell, secret: DOOR_HOOK}\n");
  std::vector<std::string> pinedArgs = {binDir() + "/pined", "--home", home};
  if (seatbeltStandIn())
    pinedArgs.insert(pinedArgs.end(), {"--sandbox-backend", "seatbelt", "--sandbox-exec", testBinDir() + "/fixtures/sandbox-exec"});
  auto refused = run(pinedArgs);
  CHECK(refused.exitCode == 2);
  CHECK_MESSAGE(contains(refused.err, "secret 'DOOR_HOOK' is not in .env"), refused.err);

  const std::string value = "door-hook-secret-5f2a9c81e7d04b36";
  auto set = run({binDir() + "/pinectl", "--home", home, "secret", "set", "DOOR_HOOK"}, value + "\n");
  CHECK_MESSAGE(set.exitCode == 0, set.err);
  CHECK(contains(set.out, "stored DOOR_HOOK in " + home + "/.env (pined is not running"));
  struct stat st {};
  REQUIRE(stat((home + "/.env").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(contains(readText(home + "/.env"), "DOOR_HOOK=" + value));
  CHECK(contains(readText(home + "/data/logs/audit.jsonl"), "\"by\":\"pinectl, pined not running\""));
  CHECK_FALSE(contains(readText(home + "/data/logs/audit.jsonl"), value));
  auto empty = run({binDir() + "/pinectl", "--home", home, "secret", "set", "OTHER"}, "\n");
  CHECK(empty.exitCode == 1);
  CHECK_FALSE(contains(readText(home + "/.env"), "OTHER"));

  Pined pined(home, {}, {});  // the configuration validates now
  CHECK(pined.api("GET", "/v1/sources").status == 200);
  // With pined running, its own writer is used, and the offline one refuses to write behind it.
  auto behind = run({binDir() + "/pined", "--home", home, "--set-secret", "SNEAKY"}, "value-123456\n");
  CHECK(behind.exitCode != 0);
  CHECK_MESSAGE(contains(behind.err, "another pined already runs on " + home), behind.err);
  CHECK(pined.ctl({"secret", "set", "LATER"}, "later-value-1\n").exitCode == 0);
  auto names = pined.ctl({"secret", "list"}).out;
  CHECK(names == "DOOR_HOOK\nLATER\n");
}

TEST_CASE("pinectl task ID: each tool call with its decision and result, refusals with their reasons, the answer; "
          "send's progress names a failed worker tool") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  writeMinimalConfig(home, {"main"});
  writeText(home + "/agents/main/agent.yaml", "description: test agent main\nmode: auto\n");
  writeText(home + "/providers/replies.yaml", R"(replies:
  - match: "look around"
    turns:
      - tool_calls:
          - {name: read, arguments: {path: missing-7f3a.txt}}
          - {name: bash, arguments: {command: "rm -rf /"}}
          - {name: write, arguments: {path: kept.txt, content: "hello"}}
      - text: "Looked around; wrote kept.txt."
  - text: "plain"
)");
  Pined pined(home, {}, {});

  auto sent = pined.ctl({"send", "main", "look around", "--json"});
  REQUIRE_MESSAGE(sent.exitCode == 0, sent.err);
  const std::string id = nlohmann::json::parse(sent.out)["id"];
  // The worker's own tool that failed is named in the progress lines, not only "allowed".
  CHECK_MESSAGE(contains(sent.err, "  read: allowed"), sent.err);
  CHECK_MESSAGE(contains(sent.err, "  read: failed: "), sent.err);
  CHECK_MESSAGE(contains(sent.err, "missing-7f3a.txt"), sent.err);
  CHECK_MESSAGE(!contains(sent.err, "write: failed"), sent.err);

  auto shown = pined.ctl({"task", id});
  REQUIRE_MESSAGE(shown.exitCode == 0, shown.err);
  const std::string& out = shown.out;
  INFO(out);
  CHECK(contains(out, "task " + id + "  main/main  done"));
  CHECK(contains(out, "asked:\n  look around"));
  // Each call in order: the decision, then what came of it (the worker's report, labelled).
  auto readAt = out.find("read {\"path\":\"missing-7f3a.txt\"}");
  auto bashAt = out.find("bash {\"command\":\"rm -rf /\"}");
  auto writeAt = out.find("write {");
  REQUIRE(readAt != std::string::npos);
  REQUIRE(bashAt != std::string::npos);
  REQUIRE(writeAt != std::string::npos);
  CHECK(readAt < bashAt);
  CHECK(bashAt < writeAt);
  CHECK(contains(out.substr(readAt, bashAt - readAt), "-> failed: "));
  CHECK(contains(out.substr(readAt, bashAt - readAt), "(as its worker reported)"));
  CHECK(contains(out.substr(bashAt, writeAt - bashAt), "refused: the command guard: "));
  CHECK_FALSE(contains(out.substr(bashAt, writeAt - bashAt), "-> "));  // a refused call has no result
  CHECK(contains(out.substr(writeAt), "allowed"));
  CHECK(contains(out.substr(writeAt), "-> ok"));
  CHECK(contains(out, "answer:\nLooked around; wrote kept.txt."));

  // --json: the task and its audit lines.
  auto j = nlohmann::json::parse(pined.ctl({"task", id, "--json"}).out, nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["task"]["id"] == id);
  CHECK(j["task"]["text"] == "look around");
  int results = 0;
  for (auto& e : j["audit"])
    if (e["event"] == "tool.result") {
      ++results;
      CHECK(e["by"] == "worker");
    }
  CHECK(results == 2);  // read and write ran; bash was refused before it ran

  // An unknown task: exit 1, saying so.
  auto unknown = pined.ctl({"task", "t0-0-nothing"});
  CHECK(unknown.exitCode == 1);
  CHECK_MESSAGE(contains(unknown.err, "no task 't0-0-nothing'"), unknown.err);
}
