// What the store keeps so that a crash of the broker loses nothing (schema step 3): what
// started a task, the journal of its tool calls, pined's boot, mode switches.
#include "tests/store/helpers.h"

using namespace pine::store;
using namespace storetest;

namespace {

TaskRow journalTask(const std::string& id) {
  TaskRow t;
  t.id = id;
  t.agent = "main";
  t.session = "main";
  t.text = "clean up the notes";
  t.trust = "owner";
  t.state = "running";
  t.createdMs = 1000;
  return t;
}

StepRow journalStep(const std::string& task, const std::string& tool, const std::string& side) {
  StepRow s;
  s.taskId = task;
  s.tool = tool;
  s.args = R"({"command":"echo one >> steps.txt"})";
  s.argsHash = "hash-" + tool;
  s.side = side;
  s.startedMs = 2000;
  return s;
}

}  // namespace

TEST_CASE("tasks keep what started them, their attempt and usage as it happens") {
  TempDir dir;
  auto s = Store::open(dir.db());
  auto t = journalTask("t1");
  t.origin = "route:house";
  t.request = R"({"chain":["main","house"],"hops":2})";
  t.attempt = 1;
  s->putTask(t);
  s->addTaskUsage("t1", {100, 20, 0, 0, 0.5, 0});
  s->addTaskUsage("t1", {1, 2, 0, 0, 0.25, 0});
  auto r = s->task("t1");
  REQUIRE(r);
  CHECK(r->origin == "route:house");
  CHECK(r->request == t.request);
  CHECK(r->attempt == 1);
  CHECK(r->usage.tokensIn == 101);
  CHECK(r->usage.tokensOut == 22);
  CHECK(r->usage.cost == doctest::Approx(0.75));
  // A request that is not JSON, or a negative attempt, is refused and changes nothing.
  auto bad = t;
  bad.request = "{not json";
  CHECK(errorOf([&] { s->putTask(bad); }).find("request") != std::string::npos);
  bad = t;
  bad.attempt = -1;
  CHECK(errorOf([&] { s->putTask(bad); }).find("attempt") != std::string::npos);
  CHECK(s->task("t1")->request == t.request);
}

TEST_CASE("journal: steps numbered per task, settled once, cut off at start, answered once") {
  TempDir dir;
  auto s = Store::open(dir.db());
  // A step belongs to a stored task.
  CHECK(errorOf([&] { s->addStep(journalStep("nobody", "bash", "worker")); }).find("store the task") !=
        std::string::npos);
  s->putTask(journalTask("t1"));
  s->putTask(journalTask("t2"));
  CHECK(s->addStep(journalStep("t1", "bash", "worker")) == 1);
  CHECK(s->addStep(journalStep("t1", "send", "broker")) == 2);
  CHECK(s->addStep(journalStep("t2", "write", "worker")) == 1);
  // Bad rows are refused before anything is written.
  auto bad = journalStep("t1", "bash", "pined");
  CHECK(errorOf([&] { s->addStep(bad); }).find("side") != std::string::npos);
  bad = journalStep("t1", "bash", "worker");
  bad.args = "not json";
  CHECK(errorOf([&] { s->addStep(bad); }).find("args") != std::string::npos);
  CHECK(s->steps("t1").size() == 2);

  // The broker's own call: settled with its result, once.
  CHECK(s->settleStep("t1", 2, "done", "sent to the owner", 3000));
  CHECK_FALSE(s->settleStep("t1", 2, "failed", "late", 3001));
  CHECK(errorOf([&] { s->settleStep("t1", 1, "pending", "", 1); }).find("state") != std::string::npos);
  // The worker asked again: its pending calls returned; the other task's stay pending.
  CHECK(s->settlePendingSteps("t1", "worker", "done", 3100) == 1);
  auto steps = s->steps("t1");
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].state == "done");
  CHECK(steps[0].endedMs == 3100);
  CHECK(steps[1].state == "done");
  CHECK(steps[1].result == "sent to the owner");
  CHECK(steps[1].side == "broker");
  // The broker starts: whatever was pending was cut off.
  CHECK(s->interruptPendingSteps(4000) == 1);
  CHECK(s->steps("t2")[0].state == "unknown");
  CHECK(s->interruptPendingSteps(4001) == 0);
  CHECK_FALSE(s->steps("t2")[0].answered);
  s->markStepAnswered("t2", 1);
  CHECK(s->steps("t2")[0].answered);
}

TEST_CASE("journal: a task's steps go with it (retention), and a secret is rewritten out of them") {
  TempDir dir;
  auto s = Store::open(dir.db());
  auto t = journalTask("t1");
  t.state = "done";
  t.endedMs = 100;
  s->putTask(t);
  const std::string secret = "sk-live-1a2b3c4d5e6f";
  auto step = journalStep("t1", "bash", "broker");
  step.args = "{\"command\":\"curl -H 'Authorization: " + secret + "'\"}";
  s->addStep(step);
  s->settleStep("t1", 1, "done", "used " + secret, 200);
  auto redact = [&](const std::string& text) {
    std::string out = text;
    for (size_t p; (p = out.find(secret)) != std::string::npos;) out.replace(p, secret.size(), "[redacted]");
    return out;
  };
  CHECK(s->rewriteText(redact) == 2);
  auto kept = s->steps("t1");
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].args == "{\"command\":\"curl -H 'Authorization: [redacted]'\"}");
  CHECK(kept[0].result == "used [redacted]");
  s->purgeOlderThan(1000);
  CHECK_FALSE(s->task("t1"));
  CHECK(s->steps("t1").empty());
}

TEST_CASE("approvals of one task, oldest first") {
  TempDir dir;
  auto s = Store::open(dir.db());
  auto a = [&](const std::string& id, const std::string& task, long long created) {
    ApprovalRow r;
    r.id = id;
    r.agent = "main";
    r.session = "main";
    r.taskId = task;
    r.tool = "send";
    r.args = "{}";
    r.state = "pending";
    r.createdMs = created;
    s->putApproval(r);
  };
  a("a2", "t1", 20);
  a("a1", "t1", 10);
  a("b1", "t2", 5);
  auto rows = s->approvalsOfTask("t1");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].id == "a1");
  CHECK(rows[1].id == "a2");
  CHECK(s->approvalsOfTask("t3").empty());
}

TEST_CASE("pined's boot: the same id keeps grants and mode switches, another one removes them") {
  TempDir dir;
  auto s = Store::open(dir.db());
  CHECK(errorOf([&] { s->beginBoot("", 1); }).find("boot id") != std::string::npos);
  CHECK(s->beginBoot("boot-1", 1));  // nothing stored yet: a fresh start
  s->addGrant({"main", "main", "always", "tool:bash", false, 2});
  s->addGrant({"main", "side", "read", "/srv/notes", true, 2});
  s->setModeSwitch("main", "manual", 3);
  s->setModeSwitch("house", "bypass", 3);
  s->setModeSwitch("main", "auto", 4);  // the later switch stands
  CHECK(errorOf([&] { s->setModeSwitch("main", "yolo", 5); }).find("mode") != std::string::npos);
  // The broker restarts under the same pined: everything stays.
  CHECK_FALSE(s->beginBoot("boot-1", 10));
  CHECK(s->grants("main", "main").size() == 1);
  CHECK(s->grants("main", "side").size() == 1);
  auto modes = s->modeSwitches();
  REQUIRE(modes.size() == 2);
  CHECK(modes[0] == std::pair<std::string, std::string>{"house", "bypass"});
  CHECK(modes[1] == std::pair<std::string, std::string>{"main", "auto"});
  // pined started afresh: grants, "always" answers and mode switches are gone; sessions stay.
  CHECK(s->beginBoot("boot-2", 20));
  CHECK(s->grants("main", "main").empty());
  CHECK(s->grants("main", "side").empty());
  CHECK(s->modeSwitches().empty());
  CHECK(s->session("main", "main"));
  CHECK_FALSE(s->beginBoot("boot-2", 30));
}
