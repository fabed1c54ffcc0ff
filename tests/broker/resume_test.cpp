// A run resumed after a crash of the broker, against the fake broker: its journal answers
// exact repeats (a call whose outcome is known is not redone, one whose outcome is unknown
// is checked first), it waits on the approval its interrupted run asked for, and the
// recovery plan resumes what is safe and ends the rest with a reason, closing its approvals.
#include <doctest/doctest.h>
#include <kj/async.h>

#include "broker/task_queue.h"
#include "broker/task_recovery.h"
#include "tests/broker/fake_services.h"

using namespace brokertest;

namespace {

const char* kShellAgent = "description: shell\ntools: [read, write, bash, send]\n";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Records what the queue would start, instead of starting workers.
struct FakeLauncher final : pine::TaskQueue::Launcher {
  std::vector<std::string> launched;
  void launch(const std::string& id) override { launched.push_back(id); }
  bool cancel(const std::string&) override { return false; }
};

}  // namespace

TEST_CASE("resume: a call that ran is not run again, one cut off is checked first, then runs if asked again") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  FakeServices broker({{"main", kShellAgent}});
  const std::string once = R"({"command":"echo one >> steps.txt"})";
  const std::string slow = R"({"command":"sleep 97"})";
  {
    auto run = broker.run("t1", "main", "main");
    CHECK(run->checkTool("bash", once).wait(ws).allowed);
    CHECK(run->checkTool("read", R"({"path":"steps.txt"})").wait(ws).allowed);  // the worker asked again
    CHECK(run->checkTool("bash", slow).wait(ws).allowed);
    CHECK(run->callTool("send", R"({"to":"owner","text":"halfway"})").wait(ws).result == "sent to the owner");
    CHECK(run->checkTool("bash", slow).wait(ws).allowed);  // a second sleep, still running at the crash
  }
  // The crash: whatever was running is cut off.
  broker.restartDesk();
  CHECK(broker.db->interruptPendingSteps(5) == 1);
  auto steps = broker.db->steps("t1");
  REQUIRE(steps.size() == 4);  // reads are not journalled
  CHECK(steps[0].state == "done");
  CHECK(steps[1].state == "done");
  CHECK(steps[2].state == "done");
  CHECK(steps[2].result == "sent to the owner");
  CHECK(steps[3].state == "unknown");
  std::string note = pine::TaskJournal::resumeNote(steps, 1, {});
  CHECK(contains(note, "- done: bash " + once));
  CHECK(contains(note, "- done: send"));
  CHECK(contains(note, "-> sent to the owner"));
  CHECK(contains(note, "- interrupted, outcome unknown: bash " + slow));

  auto resumed = broker.run("t1", "main", "main", 1);
  auto again = resumed->checkTool("bash", once).wait(ws);
  CHECK_FALSE(again.allowed);
  CHECK(contains(again.reason, "already ran before pine's broker restarted"));
  size_t noticesBefore = broker.notices.size();
  auto sendAgain = resumed->callTool("send", R"({"to":"owner","text":"halfway"})").wait(ws);
  CHECK_FALSE(sendAgain.isError);
  CHECK(contains(sendAgain.result, "not done again"));
  CHECK(contains(sendAgain.result, "sent to the owner"));
  CHECK(broker.notices.size() == noticesBefore);  // the owner got "halfway" once
  // Two sleeps ran before: the first finished, the second was cut off.
  auto first = resumed->checkTool("bash", slow).wait(ws);
  CHECK_FALSE(first.allowed);
  CHECK(contains(first.reason, "already ran"));
  auto cut = resumed->checkTool("bash", slow).wait(ws);
  CHECK_FALSE(cut.allowed);
  CHECK(contains(cut.reason, "its outcome is unknown"));
  CHECK(contains(cut.reason, "Check whether it took effect"));
  CHECK(resumed->checkTool("read", R"({"path":"steps.txt"})").wait(ws).allowed);  // it checks (and the repeat breaker rests)
  // Told, the model may still decide to run it: the next exact call goes through, journalled anew.
  CHECK(resumed->checkTool("bash", slow).wait(ws).allowed);
  CHECK(broker.db->steps("t1").back().attempt == 1);
  // A call the first attempt never made is decided as usual.
  CHECK(resumed->checkTool("bash", R"({"command":"echo two"})").wait(ws).allowed);
}

TEST_CASE("resume: the run waits on the approval asked before the crash; approved, the action is done once") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  FakeServices broker({{"main", kShellAgent}}, "security:\n  approvalTimeout: 60\n");
  broker.sessions().markTainted("main", "main", "read a web page");
  const std::string args = R"({"to":"owner","text":"the report"})";
  {
    auto run = broker.run("t1", "main", "main");
    auto waiting = run->callTool("send", args);
    CHECK_FALSE(waiting.poll(ws));
  }
  broker.restartDesk();
  broker.db->interruptPendingSteps(5);
  auto asked = broker.pending();
  REQUIRE(asked.size() == 1);
  std::string note = pine::TaskJournal::resumeNote(broker.db->steps("t1"), 1, asked);
  CHECK(contains(note, "waiting for the owner's approval: send"));

  auto resumed = broker.run("t1", "main", "main", 1);
  auto sent = resumed->callTool("send", args);
  CHECK_FALSE(sent.poll(ws));
  CHECK(broker.db->approvalsOfTask("t1").size() == 1);  // the owner is not asked twice
  size_t before = broker.notices.size();
  REQUIRE_FALSE(broker.desk->decide(asked[0].id, true, false, "owner"));
  auto answer = sent.wait(ws);
  CHECK(answer.result == "sent to the owner");
  REQUIRE(broker.notices.size() == before + 1);
  CHECK(broker.notices.back() == "main: the report");
  // The step went ahead on that approval: a further identical call of this attempt asks anew.
  CHECK(broker.db->steps("t1").back().approvalId == asked[0].id);
  auto third = resumed->callTool("send", args);
  CHECK_FALSE(third.poll(ws));
  CHECK(broker.db->approvalsOfTask("t1").size() == 2);
}

TEST_CASE("resume: an approval answered while nobody waited counts; one that timed out while down is a no") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  FakeServices broker({{"main", kShellAgent}}, "security:\n  approvalTimeout: 60\n");
  broker.sessions().markTainted("main", "main", "read a web page");
  {
    auto run = broker.run("t1", "main", "main");
    auto a = run->callTool("send", R"({"to":"owner","text":"yes"})");
    auto b = run->callTool("send", R"({"to":"owner","text":"late"})");
    CHECK_FALSE(a.poll(ws));
  }
  broker.restartDesk();
  auto asked = broker.pending();
  REQUIRE(asked.size() == 2);
  // The owner answers the first while the broker is still coming back; the second's time runs out.
  REQUIRE_FALSE(broker.desk->decide(asked[0].id, true, false, "owner"));
  pine::store::ApprovalRow overdue = asked[1];
  overdue.expiresMs = 1;
  broker.db->putApproval(overdue);
  broker.desk->expireOverdue();
  CHECK(broker.db->approval(asked[1].id)->state == "timeout");

  auto resumed = broker.run("t1", "main", "main", 1);
  auto yes = resumed->callTool("send", R"({"to":"owner","text":"yes"})");
  REQUIRE(yes.poll(ws));
  CHECK(yes.wait(ws).result == "sent to the owner");
  auto late = resumed->callTool("send", R"({"to":"owner","text":"late"})");
  REQUIRE(late.poll(ws));
  CHECK(contains(late.wait(ws).result, "did not answer"));
  CHECK(broker.db->approvalsOfTask("t1").size() == 2);
}

TEST_CASE("recovery plan: resumed where safe; ended with a reason otherwise, and its approvals closed") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  FakeServices broker({{"main", kShellAgent}, {"house", kShellAgent}});
  auto task = [&](const std::string& id, const std::string& state, int attempt, const std::string& parent = "",
                  const std::string& agent = "main") {
    pine::store::TaskRow t;
    t.id = id;
    t.agent = agent;
    t.session = agent == "main" ? "main" : "from-main";
    t.text = "task " + id;
    t.trust = "owner";
    t.state = state;
    t.attempt = attempt;
    t.parent = parent;
    t.origin = "owner";
    t.request = pine::requestJson(pine::RunRequest{}).dump();
    t.createdMs = 10 + (long long)broker.db->unfinishedTasks().size();
    broker.db->putTask(t);
  };
  task("running", "running", 0);
  task("queued", "queued", 0);
  task("child", "running", 0, "running", "house");
  task("looping", "running", pine::kMaxResumes);
  task("gone", "running", 0, "", "nobody");
  pine::store::TaskRow broken = *broker.db->task("queued");
  broken.id = "broken";
  broken.request = "[1]";
  broken.createdMs = 99;
  broker.db->putTask(broken);

  auto plan = pine::planRecovery(broker.db->unfinishedTasks(), false, *broker.config, *broker.db);
  std::vector<std::string> resumed, ended;
  for (auto& r : plan.resume) resumed.push_back(r.row.id);
  for (auto& e : plan.end) ended.push_back(e.row.id + ": " + e.why);
  CHECK(resumed == std::vector<std::string>{"running", "queued"});
  CHECK(contains(plan.resume[0].note, "This task was interrupted"));
  CHECK(plan.resume[1].note.empty());  // it never started: nothing to tell
  REQUIRE(ended.size() == 4);
  CHECK(contains(ended[0], "child: the broker restarted while this task was running"));
  CHECK(contains(ended[0], "a delegated task or sub-agent is not resumed"));
  CHECK(contains(ended[1], "looping: the broker restarted 3 times"));
  CHECK(contains(ended[1], "not resumed again"));
  CHECK(contains(ended[2], "gone: "));
  CHECK(contains(ended[2], "agent 'nobody' is no longer configured"));
  CHECK(contains(ended[3], "broken: "));
  CHECK(contains(ended[3], "what started it was not stored"));

  // pined itself restarted: nothing resumes.
  auto fresh = pine::planRecovery(broker.db->unfinishedTasks(), true, *broker.config, *broker.db);
  CHECK(fresh.resume.empty());
  CHECK(fresh.end.size() == 6);
  CHECK(contains(fresh.end[0].why, "pine restarted"));
}

TEST_CASE("recovery: a task that is not resumed ends, and its pending approval is closed: answering it says so") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  FakeServices broker({{"main", kShellAgent}});
  broker.sessions().markTainted("main", "main", "read a web page");
  {
    auto run = broker.run("t1", "main", "main");
    auto waiting = run->callTool("send", R"({"to":"owner","text":"x"})");
    CHECK_FALSE(waiting.poll(ws));
  }
  broker.restartDesk();
  auto asked = broker.pending();
  REQUIRE(asked.size() == 1);
  pine::TaskQueue queue(*broker.db, broker.homeDirs, broker.config, broker.sessions(), broker.approvals(), broker.feed);
  FakeLauncher launcher;
  queue.setLauncher(launcher);
  auto plan = pine::recoverTasks(*broker.db, broker.approvals(), queue, *broker.config, true);
  CHECK(plan.resume.empty());
  CHECK(launcher.launched.empty());
  auto t = broker.db->task("t1");
  CHECK(t->state == "failed");
  CHECK(contains(t->error, "pine restarted"));
  CHECK(broker.pending().empty());
  auto closed = broker.db->approval(asked[0].id);
  CHECK(closed->state == "cancelled");
  CHECK(contains(closed->decidedBy, "pine restarted"));
  auto answer = broker.desk->decide(asked[0].id, true, false, "owner");
  REQUIRE(answer);
  CHECK(answer->why == pine::AnswerRefused::Why::Closed);
  CHECK(contains(answer->message, "is closed"));
}

TEST_CASE("recovery: resumed tasks go back into their queues in order, one running per conversation") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  FakeServices broker({{"main", kShellAgent}});
  auto stored = [&](const std::string& id, const std::string& state, const std::string& session, long long created) {
    pine::store::TaskRow t;
    t.id = id;
    t.agent = "main";
    t.session = session;
    t.text = "task " + id;
    t.trust = "owner";
    t.state = state;
    t.origin = "owner";
    t.createdMs = created;
    broker.db->putTask(t);
  };
  stored("a-running", "running", "main", 1);
  stored("b-queued", "queued", "main", 2);
  stored("c-other", "queued", "side", 3);
  pine::TaskQueue queue(*broker.db, broker.homeDirs, broker.config, broker.sessions(), broker.approvals(), broker.feed);
  FakeLauncher launcher;
  queue.setLauncher(launcher);
  auto plan = pine::recoverTasks(*broker.db, broker.approvals(), queue, *broker.config, false);
  CHECK(plan.resume.size() == 3);
  CHECK(launcher.launched == std::vector<std::string>{"a-running", "c-other"});
  CHECK(queue.find("a-running")->attempt == 1);
  CHECK(queue.find("b-queued")->attempt == 0);
  CHECK(broker.db->task("a-running")->attempt == 1);
  CHECK(contains(queue.noteFor("a-running"), "interrupted"));
  // The first one ends: its conversation's next task starts, and the resume note is kept with it.
  queue.end("a-running", pine::TaskQueue::Ending{true, "finished", "[]", ""});
  CHECK(launcher.launched.back() == "b-queued");
  auto messages = broker.db->messages("main", "main");
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].role == "user");
  CHECK(messages[1].role == "note");
  CHECK(contains(messages[1].content, "interrupted"));
}
