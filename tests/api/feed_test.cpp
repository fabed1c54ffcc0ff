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
