// Topics (layer 9): pine's own topics, MQTT matching, publish checks.
#include "broker/policy/topics.h"

#include <string>
#include <vector>

#include "common/glob.h"

#include "tests/policy/helpers.h"

using namespace policy_test;
using pine::policy::checkPublish;
using pine::policy::isReservedTopic;
using pine::policy::publishTrust;
using pine::policy::topicMatches;
using pine::policy::validateTopic;

TEST_CASE("topics: reserved are pine's own first levels and the bare words") {
  struct Row { const char* topic; bool reserved; };
  const Row rows[] = {
      {"agent", true},      {"agent/x", true},     {"approval/1", true}, {"pine/started", true},
      {"state/house/t", true}, {"timer", true},     {"timer/x/y", true},
      {"agentx/", false},   {"agentx/y", false},   {"agents/x", false},  {"house/agent", false},
      {"pine-things/x", false}, {"Agent/x", false}, {"", false},          {"xstate/y", false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.topic);
    CHECK(isReservedTopic(r.topic) == r.reserved);
  }
}

TEST_CASE("topics: MQTT matching with '+', '#' and '*' inside a level") {
  struct Row { const char* pattern; const char* topic; bool match; };
  const Row rows[] = {
      {"house/lamp", "house/lamp", true},
      {"house/lamp", "house/lamp/x", false},
      {"house/+", "house/lamp", true},
      {"house/+", "house/lamp/on", false},
      {"house/+/on", "house/lamp/on", true},
      {"+/+", "a/b", true},
      {"+", "a/b", false},
      {"house/#", "house/lamp/on", true},
      {"house/#", "house", true},        // MQTT: '#' also matches the parent
      {"house/#", "houses/x", false},
      {"#", "anything/at/all", true},
      {"house/#/on", "house/lamp/on", false},  // '#' not last: malformed, matches nothing
      {"house/#x", "house/#x", false},
      {"house/a+", "house/a+", false},         // '+' beside other characters: malformed
      {"house/lamp*", "house/lamp-kitchen", true},
      {"house/lamp*", "house/lamp/kitchen", false},  // '*' stays inside its level
      {"house/*lamp", "house/lamp", true},
      {"house/*lamp", "lamp", false},          // no match across a missing prefix level
      {"*/lamp", "house/lamp", true},
      {"*/lamp", "lamp", false},
      {"sensor/*/temp", "sensor/a/b/temp", false},
      {"", "", false},
      {"", "x", false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.pattern);
    CAPTURE(r.topic);
    CHECK(topicMatches(r.pattern, r.topic) == r.match);
  }
}

namespace {

// The rule as the documentation states it, on lists of levels: the matcher walks the texts instead.
bool matchesByLevels(const std::string& pattern, const std::string& topic) {
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    size_t i = 0;
    for (size_t j; (j = s.find('/', i)) != std::string::npos; i = j + 1) out.push_back(s.substr(i, j - i));
    out.push_back(s.substr(i));
    return out;
  };
  if (pattern.empty()) return false;
  auto pat = split(pattern), top = split(topic);
  for (size_t i = 0; i < pat.size(); ++i) {
    if (pat[i] == "#") return i + 1 == pat.size();
    if (pat[i].find_first_of("#") != std::string::npos) return false;
    if (pat[i].find('+') != std::string::npos && pat[i] != "+") return false;
    if (i >= top.size()) return false;
    if (pat[i] != "+" && !pine::globMatch(pat[i], top[i])) return false;
  }
  return pat.size() == top.size();
}

}  // namespace

TEST_CASE("topics: matching agrees with the rule on lists of levels for every short pattern and topic") {
  // Every string of up to 4 characters over these: levels, empty levels, wildcards, globs.
  const std::string alphabet = "a/+#*";
  std::vector<std::string> all{""};
  for (size_t from = 0, len = 1; len <= 4; ++len) {
    size_t to = all.size();
    for (size_t i = from; i < to; ++i)
      for (char c : alphabet) all.push_back(all[i] + c);
    from = to;
  }
  size_t matched = 0;
  for (const auto& pattern : all)
    for (const auto& topic : all) {
      bool want = matchesByLevels(pattern, topic);
      if (topicMatches(pattern, topic) != want) {
        CAPTURE(pattern);
        CAPTURE(topic);
        CHECK(topicMatches(pattern, topic) == want);
      }
      matched += want;
    }
  CHECK(matched > 1000);  // both answers occur often
}

TEST_CASE("topics: what can be published") {
  CHECK_FALSE(validateTopic("house/lamp/on"));
  CHECK_FALSE(validateTopic("häuser/lampe"));
  CHECK_FALSE(validateTopic(std::string(256, 'a')));
  const char* bad[] = {"", "house/+/on", "house/#", "house//lamp", "/house", "house/", "a\nb", "a\177b", "a\tb"};
  for (const char* t : bad) {
    CAPTURE(t);
    CHECK(validateTopic(t));
  }
  CHECK(validateTopic(std::string(257, 'a')));
  CHECK(validateTopic(std::string("a\0b", 3)));
  CHECK(validateTopic("caf\xc3"));          // cut UTF-8
  CHECK(validateTopic("a\xc2\x85" "b"));    // C1 control (NEL)
  // Characters that reorder or hide what the owner is shown: a right-to-left override, a
  // zero-width space, a byte order mark; the reason names it without carrying it.
  for (const char* hidden : {"c/\xe2\x80\xae" "gnp", "a\xe2\x80\x8b" "b", "\xef\xbb\xbf" "x", "a\xe2\x81\xa6" "b"}) {
    CAPTURE(hidden);
    auto w = validateTopic(hidden);
    REQUIRE(w);
    CHECK(w->find("invisible") != std::string::npos);
    CHECK(w->find("\xe2\x80") == std::string::npos);
  }
  CHECK_FALSE(validateTopic("\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d/\xd8\xb3\xd9\x84\xd8\xa7\xd9\x85"));  // the twin: right-to-left letters
  auto why = validateTopic("house/+/on");
  REQUIRE(why);
  CHECK(why->find("'+'") != std::string::npos);
  // A reason never carries the control character itself.
  auto nl = validateTopic("a\nb");
  REQUIRE(nl);
  CHECK(nl->find('\n') == std::string::npos);
}

TEST_CASE("topics: checkPublish: invalid, reserved, not on the list, on the list") {
  auto a = agent("house", {"publish_event"});
  a.publish = {"house/#", "lights/*/set"};
  CHECK_FALSE(checkPublish(a, "house/lamp/on"));
  CHECK_FALSE(checkPublish(a, "lights/kitchen/set"));
  CHECK(checkPublish(a, "lights/kitchen/get"));
  CHECK(checkPublish(a, "garden/lamp"));
  CHECK(checkPublish(a, "house/+"));
  auto everything = agent("wide", {"publish_event"});
  everything.publish = {"#"};
  CHECK_FALSE(checkPublish(everything, "anything/else"));
  for (const char* t : {"agent/main/done", "state/x", "timer", "approval/1", "pine/stop"}) {
    CAPTURE(t);
    auto why = checkPublish(everything, t);
    REQUIRE(why);
    CHECK(why->find("pine's own topics") != std::string::npos);
  }
  CHECK_FALSE(checkPublish(everything, "agentx/y"));
  auto none = agent("quiet", {"publish_event"});
  auto why = checkPublish(none, "house/x");
  REQUIRE(why);
  CHECK(why->find("no 'publish' list") != std::string::npos);
}

TEST_CASE("topics: publishTrust is untrusted if either is") {
  CHECK(publishTrust(Trust::Owner, false) == Trust::Owner);
  CHECK(publishTrust(Trust::Owner, true) == Trust::Untrusted);
  CHECK(publishTrust(Trust::Untrusted, false) == Trust::Untrusted);
  CHECK(publishTrust(Trust::Untrusted, true) == Trust::Untrusted);
}
