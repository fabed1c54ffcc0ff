// The store's tables: round trips, the rules that refuse, retention and secret rewriting.
#include <algorithm>

#include "tests/store/helpers.h"

using namespace pine::store;
using namespace storetest;

TEST_CASE("events: round trip, seq assigned on commit and strictly increasing") {
  TempDir dir;
  auto s = Store::open(dir.db());
  std::vector<Event> batch = {ev("e1"), ev("e2", "agent/main/done", 2000, "owner", "agent")};
  batch[1].payload = R"({"answer":"ok","n":[1,2]})";
  batch[1].hops = 3;
  batch[1].origin = "agent:main/main";
  s->appendEvents(batch);
  CHECK(batch[0].seq > 0);
  CHECK(batch[1].seq > batch[0].seq);
  auto e = s->event("e2");
  REQUIRE(e);
  CHECK(e->seq == batch[1].seq);
  CHECK(e->topic == "agent/main/done");
  CHECK(e->timeMs == 2000);
  CHECK(e->source == "agent");
  CHECK(e->trust == "owner");
  CHECK(e->payload == R"({"answer":"ok","n":[1,2]})");
  CHECK(e->hops == 3);
  CHECK(e->origin == "agent:main/main");
  CHECK_FALSE(s->event("nope"));
}

TEST_CASE("events: a batch with a duplicate id commits nothing; distinct ids commit") {
  TempDir dir;
  auto s = Store::open(dir.db());
  std::vector<Event> first = {ev("a")};
  s->appendEvents(first);

  std::vector<Event> inBatch = {ev("b"), ev("c"), ev("b")};
  CHECK(errorOf([&] { s->appendEvents(inBatch); }).find("'b' appears twice") != std::string::npos);
  std::vector<Event> againstStored = {ev("d"), ev("e"), ev("a")};
  std::string err = errorOf([&] { s->appendEvents(againstStored); });
  CHECK(err.find("'a' is already stored") != std::string::npos);
  CHECK(err.find(dir.db()) != std::string::npos);
  for (auto& e : againstStored) CHECK(e.seq == 0);  // nothing that was not committed
  CHECK_FALSE(s->event("d"));
  CHECK_FALSE(s->event("e"));
  CHECK(allEvents(*s).size() == 1);

  std::vector<Event> good = {ev("d"), ev("e")};
  s->appendEvents(good);
  CHECK(allEvents(*s).size() == 3);
  // A seq is never reused: the failed batch's inserts were rolled back.
  CHECK(good[0].seq == first[0].seq + 1);
}

TEST_CASE("events: bad fields are refused before anything is written; good ones pass") {
  TempDir dir;
  auto s = Store::open(dir.db());
  auto bad = [&](auto change) {
    std::vector<Event> b = {ev("ok1"), ev("x")};
    change(b[1]);
    return errorOf([&] { s->appendEvents(b); });
  };
  CHECK(bad([](Event& e) { e.trust = "admin"; }).find("trust 'admin' is not one of: owner, untrusted") !=
        std::string::npos);
  CHECK(bad([](Event& e) { e.payload = "{not json"; }).find("payload is not valid JSON") != std::string::npos);
  CHECK(bad([](Event& e) { e.payload = ""; }).find("payload is not valid JSON") != std::string::npos);
  CHECK(bad([](Event& e) { e.id = ""; }).find("event id is empty") != std::string::npos);
  CHECK(bad([](Event& e) { e.topic = ""; }).find("topic is empty") != std::string::npos);
  CHECK_FALSE(s->event("ok1"));
  std::vector<Event> good = {ev("ok1"), ev("x")};
  good[1].payload = "\"just a string\"";
  s->appendEvents(good);
  CHECK(s->event("x")->payload == "\"just a string\"");
}

TEST_CASE("events: filters and order run in SQL") {
  TempDir dir;
  auto s = Store::open(dir.db());
  std::vector<Event> b = {ev("1", "agent/a", 100, "owner", "agent"), ev("2", "agent0", 200),
                          ev("3", "agents/x", 300), ev("4", "agent/b/c", 400, "untrusted", "web"),
                          ev("5", "mqtt/x", 500)};
  s->appendEvents(b);
  auto ids = [&](EventQuery q) {
    std::string out;
    for (auto& e : s->events(q)) out += e.id;
    return out;
  };
  EventQuery q;
  CHECK(ids(q) == "12345");
  q.topicPrefix = "agent/";
  CHECK(ids(q) == "14");  // not agent0, not agents/x
  q.trust = "owner";
  CHECK(ids(q) == "1");
  q = {};
  q.source = "web";
  CHECK(ids(q) == "4");
  q = {};
  q.afterSeq = b[2].seq;
  CHECK(ids(q) == "45");
  q = {};
  q.sinceMs = 300;
  CHECK(ids(q) == "345");
  q.newestFirst = true;
  q.limit = 2;
  CHECK(ids(q) == "54");
  q = {};
  q.limit = 0;  // clamped to one row, never unbounded
  CHECK(ids(q) == "1");
  q = {};
  q.topicPrefix = std::string("\xff\xff");
  CHECK(ids(q) == "");
}

TEST_CASE("20,000 events in batches of 500 go in") {
  TempDir dir;
  auto s = Store::open(dir.db());
  long long last = 0;
  for (int b = 0; b < 40; ++b) {
    std::vector<Event> batch;
    for (int i = 0; i < 500; ++i) batch.push_back(ev("e" + std::to_string(b * 500 + i), "bench/t", b * 500 + i));
    s->appendEvents(batch);
    CHECK(batch.front().seq > last);
    last = batch.back().seq;
  }
  auto all = allEvents(*s);
  CHECK(all.size() == 20000);
  CHECK(all.back().id == "e19999");
}

TEST_CASE("tasks: round trip, upsert in place, lists, unfinished, usage") {
  TempDir dir;
  auto s = Store::open(dir.db());
  TaskRow t = sampleTask("t1", "main", "queued", 1000);
  t.parent = "t0";
  t.eventId = "e9";
  t.depth = 2;
  s->putTask(t);
  t.state = "done";
  t.answer = "done it";
  t.error = "";
  t.startedMs = 1100;
  t.endedMs = 1200;
  t.usage.tokensIn = 300;
  t.usage.tokensOut = 40;
  t.usage.cost = 0.25;
  s->putTask(t);
  auto r = s->task("t1");
  REQUIRE(r);
  CHECK(r->state == "done");
  CHECK(r->answer == "done it");
  CHECK(r->parent == "t0");
  CHECK(r->eventId == "e9");
  CHECK(r->depth == 2);
  CHECK(r->startedMs == 1100);
  CHECK(r->endedMs == 1200);
  CHECK(r->usage.tokensIn == 300);
  CHECK(r->usage.tokensOut == 40);
  CHECK(r->usage.cost == doctest::Approx(0.25));
  CHECK_FALSE(s->task("t2"));

  TaskRow u = sampleTask("t2", "main", "running", 2000);
  u.usage.tokensIn = 1000;
  u.usage.tokensOut = 60;
  u.usage.cost = 1.5;
  s->putTask(u);
  TaskRow o = sampleTask("t3", "other", "queued", 3000);
  o.usage.tokensIn = 7;
  s->putTask(o);
  s->putTask(sampleTask("t4", "other", "failed", 500));

  auto ids = [](const std::vector<TaskRow>& v) {
    std::string out;
    for (auto& x : v) out += x.id + " ";
    return out;
  };
  CHECK(ids(s->tasks(10)) == "t3 t2 t1 t4 ");
  CHECK(ids(s->tasks(2)) == "t3 t2 ");
  CHECK(ids(s->tasks(10, "main")) == "t2 t1 ");
  CHECK(ids(s->tasks(10, "", "queued")) == "t3 ");
  CHECK(ids(s->tasks(10, "other", "failed")) == "t4 ");
  CHECK(ids(s->unfinishedTasks()) == "t2 t3 ");

  auto main = s->usageSince("main", 0);
  CHECK(main.tokensIn == 1300);
  CHECK(main.tokensOut == 100);
  CHECK(main.cost == doctest::Approx(1.75));
  auto recent = s->usageSince("main", 1500);
  CHECK(recent.tokensIn == 1000);
  CHECK(s->usageSince("", 0).tokensIn == 1307);
  CHECK(s->usageSince("nobody", 0).tokensIn == 0);

  CHECK(errorOf([&] { s->putTask(sampleTask("t5", "main", "paused", 1)); }).find("state 'paused'") !=
        std::string::npos);
  CHECK_FALSE(s->task("t5"));
}

TEST_CASE("sessions: round trip; putSession keeps the messages and grants") {
  TempDir dir;
  auto s = Store::open(dir.db());
  SessionRow r{"main", "main", true, "web: fetched example.org", "bypass", true, 10, 20};
  s->putSession(r);
  auto got = s->session("main", "main");
  REQUIRE(got);
  CHECK(got->tainted);
  CHECK(got->taintReason == "web: fetched example.org");
  CHECK(got->modeOverride == "bypass");
  CHECK(got->bypassAnyway);
  CHECK(got->createdMs == 10);
  CHECK(got->updatedMs == 20);
  CHECK_FALSE(s->session("main", "other"));

  s->appendMessages({{0, "main", "main", "t1", "user", R"({"text":"hi"})", 30}});
  s->addGrant({"main", "main", "read", "/home/me/notes", false, 31});
  r.tainted = false;
  s->putSession(r);  // an upsert: a REPLACE would have cascaded into messages and grants
  CHECK(s->messages("main", "main").size() == 1);
  CHECK(s->grants("main", "main").size() == 1);

  s->putSession({"main", "side", false, "", "", false, 5, 50});
  auto list = s->sessions("main");
  REQUIRE(list.size() == 2);
  CHECK(list[0].session == "side");  // most recently updated first
  CHECK(s->sessions("other").empty());
}

TEST_CASE("messages: oldest first, the last `limit`; a session row appears; bad rows refused") {
  TempDir dir;
  auto s = Store::open(dir.db());
  std::vector<MessageRow> rows;
  for (int i = 0; i < 5; ++i)
    rows.push_back({0, "main", "chat", "t1", i % 2 ? "assistant" : "user", "{\"i\":" + std::to_string(i) + "}",
                    100 + i});
  s->appendMessages(rows);
  s->appendMessages({{0, "main", "elsewhere", "", "note", "\"x\"", 1}});
  auto all = s->messages("main", "chat");
  REQUIRE(all.size() == 5);
  CHECK(all[0].content == "{\"i\":0}");
  CHECK(all[0].role == "user");
  CHECK(all[0].taskId == "t1");
  CHECK(all[0].timeMs == 100);
  CHECK(all[1].seq > all[0].seq);
  auto last2 = s->messages("main", "chat", 2);
  REQUIRE(last2.size() == 2);
  CHECK(last2[0].content == "{\"i\":3}");
  CHECK(last2[1].content == "{\"i\":4}");
  auto sess = s->session("main", "chat");
  REQUIRE(sess);
  CHECK(sess->updatedMs == 104);

  std::vector<MessageRow> bad = {{0, "main", "chat", "", "user", "{}", 200},
                                 {0, "main", "chat", "", "system", "{}", 201}};
  CHECK(errorOf([&] { s->appendMessages(bad); }).find("role 'system'") != std::string::npos);
  bad[1] = {0, "main", "chat", "", "user", "not json", 201};
  CHECK(errorOf([&] { s->appendMessages(bad); }).find("content is not valid JSON") != std::string::npos);
  CHECK(s->messages("main", "chat").size() == 5);
}

ApprovalRow sampleApproval(const std::string& id, bool offered, long long created) {
  ApprovalRow a;
  a.id = id;
  a.agent = "main";
  a.session = "main";
  a.taskId = "t1";
  a.tool = "bash";
  a.args = R"({"command":"curl https://example.org"})";
  a.reason = "tainted session, shell with network";
  a.alwaysOffered = offered;
  a.alwaysScope = offered ? "bash" : "";
  a.state = "pending";
  a.createdMs = created;
  a.expiresMs = created + 600000;
  a.tainted = true;
  return a;
}

TEST_CASE("approvals: round trip and lists") {
  TempDir dir;
  auto s = Store::open(dir.db());
  s->putApproval(sampleApproval("a1", true, 100));
  s->putApproval(sampleApproval("a2", false, 200));
  auto a = s->approval("a1");
  REQUIRE(a);
  CHECK(a->args == R"({"command":"curl https://example.org"})");
  CHECK(a->reason == "tainted session, shell with network");
  CHECK(a->alwaysOffered);
  CHECK(a->alwaysScope == "bash");
  CHECK(a->state == "pending");
  CHECK(a->expiresMs == 600100);
  CHECK(a->tainted);
  CHECK_FALSE(s->approval("zz"));
  CHECK(s->decideApproval("a2", "denied", false, "owner:cli", 300));
  auto pending = s->approvals(true);
  REQUIRE(pending.size() == 1);
  CHECK(pending[0].id == "a1");
  auto all = s->approvals(false);
  REQUIRE(all.size() == 2);
  CHECK(all[0].id == "a2");  // newest first
  auto bad = sampleApproval("a3", false, 1);
  bad.args = "{";
  CHECK(errorOf([&] { s->putApproval(bad); }).find("args is not valid JSON") != std::string::npos);
  CHECK_FALSE(s->approval("a3"));
}

TEST_CASE("approvals: decided once; the second answer is refused and changes nothing") {
  TempDir dir;
  auto s = Store::open(dir.db());
  s->putApproval(sampleApproval("a1", true, 100));
  CHECK(s->decideApproval("a1", "approved", true, "owner:telegram", 500));
  CHECK_FALSE(s->decideApproval("a1", "denied", false, "timeout", 900));
  auto a = s->approval("a1");
  CHECK(a->state == "approved");
  CHECK(a->always);
  CHECK(a->decidedBy == "owner:telegram");
  CHECK(a->decidedMs == 500);
  CHECK_FALSE(s->decideApproval("unknown", "denied", false, "x", 1));
}

TEST_CASE("approvals: 'always' only where it was offered, and only with approved") {
  TempDir dir;
  auto s = Store::open(dir.db());
  s->putApproval(sampleApproval("ask-every-time", false, 100));
  std::string err = errorOf([&] { s->decideApproval("ask-every-time", "approved", true, "owner", 1); });
  CHECK(err.find("'always' was not offered") != std::string::npos);
  CHECK(s->approval("ask-every-time")->state == "pending");
  CHECK(s->decideApproval("ask-every-time", "approved", false, "owner", 1));
  CHECK_FALSE(s->approval("ask-every-time")->always);

  s->putApproval(sampleApproval("offered", true, 100));
  CHECK(errorOf([&] { s->decideApproval("offered", "denied", true, "owner", 1); }).find("approved only") !=
        std::string::npos);
  CHECK(errorOf([&] { s->decideApproval("offered", "maybe", false, "owner", 1); }).find("state 'maybe'") !=
        std::string::npos);
  CHECK(s->approval("offered")->state == "pending");
  CHECK(s->decideApproval("offered", "timeout", false, "timer", 2));
  auto forged = sampleApproval("forged", false, 1);
  forged.state = "approved";
  forged.always = true;
  CHECK(errorOf([&] { s->putApproval(forged); }).find("'always' was not offered") != std::string::npos);
}

TEST_CASE("grants: round trip, widened by a tainted yes, cleared at daemon start") {
  TempDir dir;
  auto s = Store::open(dir.db());
  s->addGrant({"main", "main", "always", "mcp:web", false, 10});
  s->addGrant({"main", "main", "network", "shell", false, 11});
  s->addGrant({"main", "main", "network", "shell", true, 12});
  s->addGrant({"main", "side", "write", "/home/me/proj", false, 13});
  auto g = s->grants("main", "main");
  REQUIRE(g.size() == 2);
  CHECK(g[0].kind == "always");
  CHECK(g[0].value == "mcp:web");
  CHECK_FALSE(g[0].whileTainted);
  CHECK(g[1].kind == "network");
  CHECK(g[1].whileTainted);
  CHECK(g[1].createdMs == 11);
  s->addGrant({"main", "main", "network", "shell", false, 14});  // a clean yes does not narrow it
  CHECK(s->grants("main", "main")[1].whileTainted);
  CHECK(s->session("main", "main"));  // the session row was made for it
  CHECK(errorOf([&] { s->addGrant({"main", "main", "root", "x", false, 1}); }).find("kind 'root'") !=
        std::string::npos);
  CHECK(s->removeAllGrants() == 3);
  CHECK(s->grants("main", "main").empty());
  CHECK(s->grants("main", "side").empty());
}

TEST_CASE("resetSession clears messages, taint, grants, mode; keeps subscriptions and other sessions") {
  TempDir dir;
  auto s = Store::open(dir.db());
  s->putSession({"main", "main", true, "web", "bypass", true, 1, 2});
  s->appendMessages({{0, "main", "main", "", "user", "{}", 3}, {0, "main", "main", "", "tool", "{}", 4}});
  s->appendMessages({{0, "main", "side", "", "user", "{}", 3}});
  s->addGrant({"main", "main", "always", "bash", true, 5});
  s->addGrant({"main", "side", "always", "bash", true, 5});
  s->putSubscription({"sub1", "main", "main", "mqtt", "door/#", false, 10, 6, 0});
  s->resetSession("main", "main");
  auto r = s->session("main", "main");
  REQUIRE(r);
  CHECK_FALSE(r->tainted);
  CHECK(r->taintReason.empty());
  CHECK(r->modeOverride.empty());
  CHECK_FALSE(r->bypassAnyway);
  CHECK(s->messages("main", "main").empty());
  CHECK(s->grants("main", "main").empty());
  CHECK(s->subscriptions("main").size() == 1);
  CHECK(s->messages("main", "side").size() == 1);
  CHECK(s->grants("main", "side").size() == 1);
}

TEST_CASE("a session's opened folder: per conversation, kept by putSession, closed by reset and by \"\"") {
  TempDir dir;
  auto s = Store::open(dir.db());
  CHECK(s->sessionFolder("main", "work").empty());
  s->setSessionFolder("main", "work", "/srv/project", 1);  // makes the session row
  CHECK(s->session("main", "work"));
  CHECK(s->sessionFolder("main", "work") == "/srv/project");
  CHECK(s->sessionFolder("main", "main").empty());
  CHECK(s->sessionFolder("other", "work").empty());
  auto row = *s->session("main", "work");
  row.tainted = true;
  s->putSession(row);  // a taint mark written later keeps the folder
  CHECK(s->sessionFolder("main", "work") == "/srv/project");
  s->resetSession("main", "work");
  CHECK(s->sessionFolder("main", "work").empty());
  s->setSessionFolder("main", "work", "/srv/project", 2);
  s->setSessionFolder("main", "work", "", 3);
  CHECK(s->sessionFolder("main", "work").empty());
}

TEST_CASE("state: round trip, byte-wise prefix lists, JSON values only") {
  TempDir dir;
  auto s = Store::open(dir.db());
  s->putState({"house/lights", "{\"on\":true}", 10, "agent:main/main"});
  s->putState({"house/door", "\"open\"", 11, "owner"});
  s->putState({"houses", "1", 12, "owner"});
  s->putState({"house/lights", "{\"on\":false}", 13, "owner"});
  auto st = s->state("house/lights");
  REQUIRE(st);
  CHECK(st->value == "{\"on\":false}");
  CHECK(st->updatedMs == 13);
  CHECK(st->updatedBy == "owner");
  CHECK_FALSE(s->state("house"));
  auto list = s->states("house/");
  REQUIRE(list.size() == 2);
  CHECK(list[0].key == "house/door");
  CHECK(list[1].key == "house/lights");
  CHECK(s->states("").size() == 3);
  CHECK(errorOf([&] { s->putState({"k", "undefined", 1, "x"}); }).find("value is not valid JSON") !=
        std::string::npos);
  CHECK_FALSE(s->state("k"));
}

TEST_CASE("subscriptions: round trip, touch, remove") {
  TempDir dir;
  auto s = Store::open(dir.db());
  s->putSubscription({"s1", "main", "main", "mqtt", "door/#", true, 30, 100, 0});
  s->putSubscription({"s2", "other", "o", "rss", "", false, 10, 200, 0});
  s->touchSubscription("s1", 5000);
  auto mine = s->subscriptions("main");
  REQUIRE(mine.size() == 1);
  CHECK(mine[0].id == "s1");
  CHECK(mine[0].session == "main");
  CHECK(mine[0].source == "mqtt");
  CHECK(mine[0].topic == "door/#");
  CHECK(mine[0].separate);
  CHECK(mine[0].throttleSec == 30);
  CHECK(mine[0].createdMs == 100);
  CHECK(mine[0].lastDeliveredMs == 5000);
  CHECK(s->subscriptions().size() == 2);
  CHECK(s->removeSubscription("s1"));
  CHECK_FALSE(s->removeSubscription("s1"));
  CHECK(s->subscriptions().size() == 1);
}

TEST_CASE("schedules' last runs and pairings: round trip") {
  TempDir dir;
  auto s = Store::open(dir.db());
  CHECK_FALSE(s->lastRun("daily"));
  s->setLastRun("daily", 1000, "t1");
  s->setLastRun("daily", 2000, "t2");
  CHECK(s->lastRun("daily") == 2000);

  auto row = [](const char* account, const char* state, const char* code, long long created, long long decided) {
    pine::store::PairingRow r;
    r.channel = "telegram";
    r.account = account;
    r.state = state;
    r.code = code;
    r.createdMs = created;
    r.decidedMs = decided;
    return r;
  };
  auto pending = row("42", "pending", "hash-of-code", 10, 0);
  pending.chatId = 42;
  pending.name = "Ann Owner";
  pending.username = "ann";
  pending.expiresMs = 1000;
  s->putPairing(pending);
  REQUIRE(s->pairingByCode("hash-of-code"));
  CHECK(s->pairingByCode("hash-of-code")->name == "Ann Owner");
  CHECK(s->pairingByCode("hash-of-code")->expiresMs == 1000);
  CHECK_FALSE(s->pairingByCode("other"));
  s->putPairing(row("43", "denied", "", 11, 12));
  s->putPairing(row("42", "paired", "", 10, 20));
  CHECK_FALSE(s->pairingByCode("hash-of-code"));  // spent
  auto p = s->pairing("telegram", "42");
  REQUIRE(p);
  CHECK(p->state == "paired");
  CHECK(p->decidedMs == 20);
  CHECK_FALSE(s->pairing("telegram", "44"));
  CHECK(s->pairings("telegram").size() == 2);
  CHECK(s->pairings("slack").empty());
  CHECK(errorOf([&] { s->putPairing(row("45", "maybe", "", 1, 0)); }).find("state 'maybe'") != std::string::npos);
  CHECK(s->removePairing("telegram", "43"));
  CHECK_FALSE(s->removePairing("telegram", "43"));
}

TEST_CASE("retention: old events, ended tasks, decided approvals, idle sessions' messages") {
  TempDir dir;
  auto s = Store::open(dir.db());
  const long long cutoff = 10000;
  std::vector<Event> b = {ev("old", "t", 9999), ev("new", "t", 10000)};
  s->appendEvents(b);
  auto t = [&](const char* id, const char* state, long long created, long long ended) {
    auto x = sampleTask(id, "main", state, created);
    x.endedMs = ended;
    s->putTask(x);
  };
  t("done-old", "done", 100, 200);
  t("refused-old-no-end", "refused", 100, 0);
  t("done-recent", "done", 100, 20000);
  t("running-old", "running", 100, 0);  // unfinished: kept whatever its age
  auto decided = sampleApproval("decided-old", false, 100);
  s->putApproval(decided);
  s->decideApproval("decided-old", "denied", false, "owner", 200);
  s->putApproval(sampleApproval("pending-old", false, 100));
  s->putApproval(sampleApproval("decided-recent", false, 100));
  s->decideApproval("decided-recent", "approved", false, "owner", 20000);
  s->appendMessages({{0, "main", "idle", "", "user", "{}", 500}});
  s->appendMessages({{0, "main", "busy", "", "user", "{}", 500}, {0, "main", "busy", "", "user", "{}", 15000}});

  auto n = s->purgeOlderThan(cutoff);
  CHECK(n.events == 1);
  CHECK(n.tasks == 2);
  CHECK(n.approvals == 1);
  CHECK(n.messages == 1);
  CHECK_FALSE(s->event("old"));
  CHECK(s->event("new"));
  CHECK_FALSE(s->task("done-old"));
  CHECK_FALSE(s->task("refused-old-no-end"));
  CHECK(s->task("done-recent"));
  CHECK(s->task("running-old"));
  CHECK_FALSE(s->approval("decided-old"));
  CHECK(s->approval("pending-old"));
  CHECK(s->approval("decided-recent"));
  CHECK(s->messages("main", "idle").empty());
  CHECK(s->session("main", "idle"));  // the row stays: only its text goes
  CHECK(s->messages("main", "busy").size() == 2);
  // New events after a purge still get higher seqs.
  std::vector<Event> more = {ev("later", "t", 30000)};
  s->appendEvents(more);
  CHECK(more[0].seq > b[1].seq);
}

TEST_CASE("rewriteText removes a secret from every text column and from the files") {
  TempDir dir;
  const std::string secret = "sk-live-9f8e7d6c5b4a";
  auto s = Store::open(dir.db());
  std::vector<Event> b = {ev("plain"), ev("escaped"), ev("clean")};
  b[0].payload = R"({"text":"token is sk-live-9f8e7d6c5b4a ok"})";
  b[1].payload = R"({"text":"sk\u002dlive-9f8e7d6c5b4a"})";  // the same secret, JSON-escaped
  s->appendEvents(b);
  auto task = sampleTask("t1", "main", "done", 1);
  task.text = "use " + secret;
  task.answer = "stored " + secret;
  s->putTask(task);
  s->appendMessages({{0, "main", "main", "t1", "user", "{\"text\":\"my key is " + secret + "\"}", 2}});
  auto a = sampleApproval("a1", false, 1);
  a.args = "{\"command\":\"curl -H 'Authorization: " + secret + "'\"}";
  s->putApproval(a);
  s->putState({"keys/api", "\"" + secret + "\"", 3, "agent:main/main"});
  bool onDisk = fileBytes(dir.db()).find(secret) != std::string::npos ||
                fileBytes(dir.db() + "-wal").find(secret) != std::string::npos;
  CHECK(onDisk);  // so the checks below can fail

  auto redact = [&](const std::string& text) {
    std::string out = text;
    for (size_t p; (p = out.find(secret)) != std::string::npos;) out.replace(p, secret.size(), "[redacted]");
    return out;
  };
  CHECK(s->rewriteText(redact) == 7);  // 2 payloads, task text and answer, message, args, state
  CHECK(s->event("plain")->payload == R"({"text":"token is [redacted] ok"})");
  CHECK(s->event("escaped")->payload == R"({"text":"[redacted]"})");
  CHECK(s->event("clean")->payload == R"({"state":"open"})");
  CHECK(s->task("t1")->text == "use [redacted]");
  CHECK(s->task("t1")->answer == "stored [redacted]");
  CHECK(s->messages("main", "main")[0].content == "{\"text\":\"my key is [redacted]\"}");
  CHECK(s->approval("a1")->args == "{\"command\":\"curl -H 'Authorization: [redacted]'\"}");
  CHECK(s->state("keys/api")->value == "\"[redacted]\"");
  CHECK(s->rewriteText(redact) == 0);
  // Neither the database file nor the WAL still holds it.
  CHECK(fileBytes(dir.db()).find(secret) == std::string::npos);
  CHECK(fileBytes(dir.db() + "-wal").find(secret) == std::string::npos);
  s.reset();
  CHECK(fileBytes(dir.db()).find(secret) == std::string::npos);
}

TEST_CASE("rewriteText keeps JSON columns JSON even when fn breaks the syntax") {
  TempDir dir;
  auto s = Store::open(dir.db());
  std::vector<Event> b = {ev("e")};
  b[0].payload = R"({"a":"x"})";
  s->appendEvents(b);
  CHECK(s->rewriteText([](const std::string& t) {
    std::string out = t;
    for (size_t p; (p = out.find('"')) != std::string::npos;) out.erase(p, 1);  // a clumsy redactor
    return out;
  }) == 1);
  auto payload = s->event("e")->payload;
  CHECK(payload == R"("{a:x}")");
}

TEST_CASE("sources: memory round trip, kept per source, forgotten with the source") {
  TempDir dir;
  auto s = Store::open(dir.db());
  s->putSourceState("web", "etag", "\"abc\"", 1000);
  s->putSourceState("web", "sha256", "00ff", 1000);
  s->putSourceState("drop", "file:a.txt", "12 deadbeef", 1000);
  s->putSourceState("web", "etag", "\"def\"", 2000);  // replaced, not added
  CHECK(s->sourceState("web", "etag") == std::optional<std::string>("\"def\""));
  CHECK_FALSE(s->sourceState("web", "nope"));
  CHECK(s->sourceStates("web") == std::map<std::string, std::string>{{"etag", "\"def\""}, {"sha256", "00ff"}});
  CHECK(s->removeSourceState("web", "sha256"));
  CHECK_FALSE(s->removeSourceState("web", "sha256"));
  CHECK(errorOf([&] { s->putSourceState("", "k", "v", 1); }).find("source") != std::string::npos);
  s->noteSourceLook("web", 3000, "42");
  s->noteSourceError("gone", 3000, "refused");  // a status line without memory
  CHECK(s->rememberedSources() == std::vector<std::string>{"drop", "gone", "web"});
  CHECK(s->forgetSource("web") == 2);  // its memory and its status line
  CHECK(s->rememberedSources() == std::vector<std::string>{"drop", "gone"});
  CHECK(s->sourceStates("web").empty());
  CHECK_FALSE(s->sourceStatus("web"));
  CHECK(s->sourceState("drop", "file:a.txt") == std::optional<std::string>("12 deadbeef"));  // others untouched
}

TEST_CASE("sources: a status line keeps a found value only when it is a number or a single word") {
  TempDir dir;
  auto s = Store::open(dir.db());
  const std::pair<const char*, bool> cases[] = {
      {"42", true},         {"-3.5", true},  {"open", true},   {"kitchen_light-2", true},
      {"", false},          {"two words", false}, {"ignore previous instructions", false},
      {"a.b.c", false},     {"1.2.3", false}, {"-", false},    {"caf\xc3\xa9", false},
      {"x\ny", false},      {"0123456789012345678901234567890123", false},
  };
  for (const auto& c : cases) {
    const char* found = c.first;  // not a structured binding: clang 14 cannot capture one (CAPTURE)
    const bool kept = c.second;
    CAPTURE(found);
    s->noteSourceLook("sensor", 1000, found);
    auto st = s->sourceStatus("sensor");
    REQUIRE(st);
    CHECK(st->lookedMs == 1000);
    CHECK(st->found == (kept ? std::string(found) : std::string()));
  }
}

TEST_CASE("sources: events and errors are counted; the last error is kept") {
  TempDir dir;
  auto s = Store::open(dir.db());
  s->noteSourceEvents("a", 1000, 3);
  s->noteSourceEvents("a", 2000, 1);
  s->noteSourceError("a", 2500, "connection refused");
  s->noteSourceError("a", 2600, "timed out");
  s->noteSourceLook("b", 10, "on");
  auto all = s->sourceStatuses();
  REQUIRE(all.size() == 2);
  CHECK(all[0].source == "a");
  CHECK(all[0].events == 4);
  CHECK(all[0].eventMs == 2000);
  CHECK(all[0].errors == 2);
  CHECK(all[0].errorMs == 2600);
  CHECK(all[0].error == "timed out");
  CHECK(all[1].source == "b");
  CHECK(all[1].found == "on");
  CHECK(all[1].events == 0);
}

TEST_CASE("sources: counts are saved with the seq they reach; the events after it are found by source") {
  TempDir dir;
  auto s = Store::open(dir.db());
  CHECK(s->sourceCountsSeq() == 0);
  std::vector<Event> b = {ev("e1"), ev("e2"), ev("e3")};
  b[0].source = b[1].source = "hook";
  b[2].source = "mqtt";
  b[2].timeMs = 77;
  s->appendEvents(b);
  // Nothing saved yet: all three are after the saved seq, by source.
  auto after = s->sourceEventsAfter(s->sourceCountsSeq());
  REQUIRE(after.size() == 2);
  CHECK(after[0].source == "hook");
  CHECK(after[0].events == 2);
  CHECK(after[0].lastSeq == b[1].seq);
  CHECK(after[1].source == "mqtt");
  CHECK(after[1].lastMs == 77);
  // Saved in one transaction with the seq they reach: nothing is after it any more.
  s->saveSourceCounts({{"hook", {2, 50}}, {"mqtt", {1, 77}}}, b[2].seq);
  CHECK(s->sourceCountsSeq() == b[2].seq);
  CHECK(s->sourceEventsAfter(s->sourceCountsSeq()).empty());
  CHECK(s->sourceStatus("hook")->events == 2);
  // A lower seq never moves it back.
  s->saveSourceCounts({}, 1);
  CHECK(s->sourceCountsSeq() == b[2].seq);
}

TEST_CASE("MCP pins (v7): none until pinned, replaced by a review, kept per agent and server, across a reopen") {
  TempDir dir;
  {
    auto s = Store::open(dir.db());
    CHECK_FALSE(s->mcpPins("main", "files"));
    s->setMcpPins("main", "files", R"([{"name":"echo"}])", 10);
    s->setMcpPins("other", "files", "[]", 11);
    s->setMcpPins("main", "files", R"([{"name":"echo","description":"new"}])", 12);
    CHECK(errorOf([&] { s->setMcpPins("", "files", "[]", 1); }).find("MCP pins agent") != std::string::npos);
  }
  auto s = Store::open(dir.db());
  CHECK(s->mcpPins("main", "files") == std::optional<std::string>(R"([{"name":"echo","description":"new"}])"));
  CHECK(s->mcpPins("other", "files") == std::optional<std::string>("[]"));
  CHECK_FALSE(s->mcpPins("main", "web"));
}
