// The feed's topic filter and its non-consuming wait.
#include <doctest/doctest.h>
#include <kj/async.h>

#include "broker/feed.h"

TEST_CASE("MQTT topic filters: + is one level, # the rest (including none)") {
  using pine::topicMatches;
  CHECK(topicMatches("a/b", "a/b"));
  CHECK_FALSE(topicMatches("a/b", "a/b/c"));
  CHECK_FALSE(topicMatches("a/b/c", "a/b"));
  CHECK(topicMatches("a/+/c", "a/x/c"));
  CHECK_FALSE(topicMatches("a/+/c", "a/x/y/c"));
  CHECK_FALSE(topicMatches("a/+", "a"));
  CHECK(topicMatches("a/+", "a/"));  // an empty level is a level
  CHECK(topicMatches("a/#", "a"));
  CHECK(topicMatches("a/#", "a/b/c"));
  CHECK(topicMatches("#", "anything/at/all"));
  CHECK_FALSE(topicMatches("a/#/c", "a/b/c"));  // '#' only last
  CHECK_FALSE(topicMatches("b/#", "a/b"));
}

TEST_CASE("ready() can be cancelled without losing an item; next() and tryNext() hand items over in order") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  pine::Feed feed;
  auto sub = feed.subscribe(nullptr, 4);
  {
    auto cancelled = sub->ready();  // dropped below, as a stream racing a timer would
    feed.publish({{"n", 1}});
  }
  auto p = sub->ready();
  CHECK(p.poll(ws));
  auto item = sub->tryNext();
  REQUIRE(item);
  CHECK((*item)["n"] == 1);
  CHECK_FALSE(sub->tryNext());
  feed.publish({{"n", 2}});
  CHECK(sub->next().wait(ws)["n"] == 2);
  for (int i = 0; i < 6; i++) feed.publish({{"n", i}});  // more than 4: overflow
  for (int i = 0; i < 4 && sub->tryNext(); i++) {
  }
  CHECK(feed.subscribers() == 0);
}

TEST_CASE("a reader that does not read is dropped by what it holds, not only by how many items") {
  // 1024 events of 900 KB each held 900 MB for one stuck SSE reader (a review: 1.3 GB for ten).
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  pine::Feed feed;
  auto stuck = feed.subscribe(nullptr, 1024, 4u << 20);
  auto reading = feed.subscribe(nullptr, 1024, 4u << 20);
  const std::string big(900 * 1024, 'x');
  for (int i = 0; i < 8; i++) {
    feed.publish(pine::eventFeedItem("t/big", i + 1, big));
    REQUIRE(reading->tryNext());  // the twin keeps up: it stays, whatever the events weigh
  }
  CHECK(feed.subscribers() == 1);
  auto last = stuck->tryNext();
  REQUIRE(last);
  CHECK((*last)["kind"] == "overflow");  // after 4 MB, not after 1024 items
  CHECK_FALSE(stuck->tryNext());
  // Small items: many fit under the same weight.
  auto small = feed.subscribe(nullptr, 1024, 4u << 20);
  for (int i = 0; i < 1000; i++) feed.publish(pine::eventFeedItem("t/small", 100 + i, "{\"n\":1}"));
  size_t got = 0;
  while (auto item = small->tryNext()) got += (*item)["kind"] == "event";
  CHECK(got == 1000);
}

TEST_CASE("every subscriber whose filter takes an item gets all of it, the last one too, even one that overflows") {
  kj::EventLoop loop;
  kj::WaitScope ws(loop);
  pine::Feed feed;
  // A moved-from item (null) has no "n": a filter or a check that meets one says so.
  auto hasN = [](const nlohmann::json& j) { return j.is_object() && j.contains("n") && j["n"].is_number(); };
  auto isEven = [hasN](const nlohmann::json& j) { return hasN(j) && j["n"].get<int>() % 2 == 0; };
  auto all = feed.subscribe(hasN, 64);
  auto small = feed.subscribe(hasN, 1);  // overflows on its second item, in the middle of the walk
  auto none = feed.subscribe([](const nlohmann::json&) { return false; }, 64);
  auto even = feed.subscribe(isEven, 64);  // last: the even items are moved into it
  for (int i = 0; i < 4; i++) feed.publish({{"n", i}, {"text", std::string(100, 'x')}});
  auto drain = [](pine::Feed::Subscription& s) {
    std::vector<nlohmann::json> got;
    while (auto item = s.tryNext()) got.push_back(*item);
    return got;
  };
  auto a = drain(*all), sm = drain(*small), e = drain(*even);
  REQUIRE(a.size() == 4);
  for (int i = 0; i < 4; i++) {
    CHECK(a[i]["n"] == i);
    CHECK(a[i]["text"] == std::string(100, 'x'));
  }
  REQUIRE(e.size() == 2);
  for (int i = 0; i < 2; i++) {
    CHECK(e[i]["n"] == 2 * i);
    CHECK(e[i]["text"] == std::string(100, 'x'));
  }
  REQUIRE(sm.size() == 1);
  CHECK(sm[0]["kind"] == "overflow");  // dropped, and said so
  CHECK(drain(*none).empty());
  CHECK(feed.subscribers() == 3);  // the one that overflowed left; the walk went on past it
}
