// The approval flow of one run, against a fake broker (fake_services.h): a real store, the
// real sessions and approvals desk, a hand-moved clock. Allowed, refused, asked and then
// approved once, always, denied or timed out; "always" holds in its conversation only; a
// yes given while clean does not carry over once the conversation has read outside content.
#include <doctest/doctest.h>
#include <kj/async.h>

#include "tests/broker/fake_services.h"

using namespace brokertest;

namespace {

const char* kAutoAgent = "description: auto\ntools: [read, write, bash, send]\n";
const char* kManualAgent = "description: manual\nmode: manual\ntools: [read, write, bash, send]\n";

std::string writeArgs(const std::string& path) { return nlohmann::json{{"path", path}, {"content", "x"}}.dump(); }

bool hasText(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("approval flow: a read is allowed, a tool outside the profile and a guarded command are refused unasked") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  FakeServices broker({{"main", kAutoAgent}, {"reader", "description: r\ntools: [read, ls]\n"}});
  auto run = broker.run("t1", "main", "main");

  auto read = run->checkTool("read", R"({"path":"note.txt"})").wait(ws);
  CHECK(read.allowed);
  auto write = run->checkTool("write", writeArgs("a.txt")).wait(ws);
  CHECK(write.allowed);  // auto mode, clean conversation

  auto wipe = run->checkTool("bash", R"({"command":"rm -rf ~/"})").wait(ws);
  CHECK_FALSE(wipe.allowed);
  CHECK(hasText(wipe.reason, "command guard"));

  auto reader = broker.run("t2", "reader", "main");
  auto forged = reader->checkTool("write", writeArgs("b.txt")).wait(ws);
  CHECK_FALSE(forged.allowed);
  CHECK(hasText(forged.reason, "not a tool of this run"));
  auto forgedBroker = reader->callTool("send", R"({"to":"owner","text":"hi"})").wait(ws);
  CHECK(forgedBroker.isError);
  CHECK(broker.pending().empty());  // nobody was asked about any of it
  CHECK(broker.notices.empty());
}

TEST_CASE("approval flow: a tainted conversation's send waits; approved once it goes out, and the next one asks again") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  FakeServices broker({{"main", kAutoAgent}});
  broker.sessions().markTainted("main", "main", "read a web page");
  auto run = broker.run("t1", "main", "main");

  auto sent = run->callTool("send", R"({"to":"owner","text":"hello"})");
  CHECK_FALSE(sent.poll(ws));  // waiting for the owner
  auto asked = broker.pending();
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].tool == "send");
  CHECK(asked[0].taskId == "t1");
  CHECK(hasText(asked[0].reason, "outside content"));
  CHECK(asked[0].tainted);
  REQUIRE_FALSE(broker.desk->decide(asked[0].id, true, false, "owner"));
  auto answer = sent.wait(ws);
  CHECK_FALSE(answer.isError);
  CHECK(answer.result == "sent to the owner");
  CHECK(broker.notices.back() == "main: hello");
  // Once is once: the same call asks again.
  auto again = run->callTool("send", R"({"to":"owner","text":"hello again"})");
  CHECK_FALSE(again.poll(ws));
  CHECK(broker.pending().size() == 1);
  // A second answer to the first request changes nothing.
  auto late = broker.desk->decide(asked[0].id, false, false, "owner");
  REQUIRE(late);
  CHECK(late->why == pine::AnswerRefused::Why::Answered);
}

TEST_CASE("approval flow: denied is reported and nothing is done; no answer within the timeout is a no") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  FakeServices broker({{"main", kAutoAgent}}, "security:\n  approvalTimeout: 30\n");
  broker.sessions().markTainted("main", "main", "read a web page");
  auto run = broker.run("t1", "main", "main");

  size_t before = broker.notices.size();
  auto denied = run->callTool("send", R"({"to":"owner","text":"leak"})");
  auto a = broker.pending();
  REQUIRE(a.size() == 1);
  REQUIRE_FALSE(broker.desk->decide(a[0].id, false, false, "owner"));
  auto d = denied.wait(ws);
  CHECK(d.isError);
  CHECK(hasText(d.result, "the owner denied send"));
  CHECK(hasText(d.result, "Do not retry"));
  // Only the "waiting for your approval" notice: the text never went out.
  REQUIRE(broker.notices.size() == before + 1);
  CHECK(hasText(broker.notices.back(), "waiting for your approval"));

  auto ignored = run->callTool("send", R"({"to":"owner","text":"leak 2"})");
  broker.advance(29 * kj::SECONDS, ws);
  CHECK_FALSE(ignored.poll(ws));
  broker.advance(2 * kj::SECONDS, ws);
  REQUIRE(ignored.poll(ws));
  auto t = ignored.wait(ws);
  CHECK(t.isError);
  CHECK(hasText(t.result, "did not answer within 30 s"));
  auto row = broker.db->approvals(false, 10);
  CHECK(row[0].state == "timeout");
  CHECK(broker.notices.back() != "main: leak 2");
}

TEST_CASE("approval flow: 'always' holds in its conversation, not in another; refused where not offered") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  FakeServices broker({{"main", kManualAgent},
                       {"listed", "description: l\ntools: [read, send]\napprove: [send]\n"}});
  auto run = broker.run("t1", "main", "main");

  auto first = run->checkTool("write", writeArgs("a.txt"));
  auto a = broker.pending();
  REQUIRE(a.size() == 1);
  CHECK(a[0].alwaysOffered);
  CHECK(a[0].alwaysScope == "tool:write");
  REQUIRE_FALSE(broker.desk->decide(a[0].id, true, true, "owner"));
  CHECK(first.wait(ws).allowed);
  // The same tool no longer asks in this conversation (also for a sub-agent of it)...
  CHECK(run->checkTool("write", writeArgs("b.txt")).wait(ws).allowed);
  auto sub = broker.run("t2", "main", "main+sub1");
  CHECK(sub->checkTool("write", writeArgs("c.txt")).wait(ws).allowed);
  CHECK(broker.pending().empty());
  // ...but does in another conversation of the same agent.
  auto other = broker.run("t3", "main", "side");
  auto asked = other->checkTool("write", writeArgs("d.txt"));
  CHECK_FALSE(asked.poll(ws));
  REQUIRE(broker.pending().size() == 1);
  REQUIRE_FALSE(broker.desk->decide(broker.pending()[0].id, false, false, "owner"));
  CHECK_FALSE(asked.wait(ws).allowed);

  // An `approve` pattern asks every time: "always" is refused, once is taken.
  auto listed = broker.run("t4", "listed", "main");
  auto send = listed->callTool("send", R"({"to":"owner","text":"one"})");
  auto l = broker.pending();
  REQUIRE(l.size() == 1);
  CHECK_FALSE(l[0].alwaysOffered);
  auto refused = broker.desk->decide(l[0].id, true, true, "owner");
  REQUIRE(refused);
  CHECK(refused->why == pine::AnswerRefused::Why::NotOffered);
  REQUIRE_FALSE(broker.desk->decide(l[0].id, true, false, "owner"));
  CHECK_FALSE(send.wait(ws).isError);
}

TEST_CASE("approval flow: a clean 'always' does not carry over once the conversation is tainted; the tainted yes holds") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  FakeServices broker({{"main", kManualAgent}});
  auto run = broker.run("t1", "main", "main");
  auto first = run->checkTool("write", writeArgs("a.txt"));
  REQUIRE(broker.pending().size() == 1);
  REQUIRE_FALSE(broker.desk->decide(broker.pending()[0].id, true, true, "owner"));
  CHECK(first.wait(ws).allowed);
  CHECK(run->checkTool("write", writeArgs("b.txt")).wait(ws).allowed);

  broker.sessions().markTainted("main", "main", "read a web page");
  auto next = broker.run("t2", "main", "main");
  next->setSandboxTainted(true);  // the next task's sandbox protects instruction files
  auto again = next->checkTool("write", writeArgs("c.txt"));
  CHECK_FALSE(again.poll(ws));  // asked again
  auto a = broker.pending();
  REQUIRE(a.size() == 1);
  CHECK(a[0].tainted);
  REQUIRE_FALSE(broker.desk->decide(a[0].id, true, true, "owner"));
  CHECK(again.wait(ws).allowed);
  // The answer given knowing what it had read holds.
  CHECK(next->checkTool("write", writeArgs("d.txt")).wait(ws).allowed);
  CHECK(broker.pending().empty());
}
