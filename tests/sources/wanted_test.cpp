// Which configured sources are wanted: subscribed, routed, start: always; nothing else.
#include <doctest/doctest.h>

#include "broker/sources/wanted.h"

using pine::sources::wantedSources;

namespace {

pine::config::Source named(const std::string& name, pine::config::SourceStart start = pine::config::SourceStart::Subscribed,
                           const std::string& type = "mqtt") {
  pine::config::Source s;
  s.name = name;
  s.type = type;
  s.start = start;
  return s;
}

std::vector<std::string> names(const std::vector<pine::config::Source>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(s.name);
  return out;
}

}  // namespace

TEST_CASE("wanted: subscribed, routed and start: always, in configuration order; nothing else") {
  pine::config::Home home;
  using pine::config::SourceStart;
  home.pine.sources = {named("idle"), named("subscribed"), named("routed"), named("always", SourceStart::Always),
                       named("folder-subscribed", SourceStart::Subscribed, "folder")};
  pine::config::Route r;
  r.name = "r";
  r.source = "routed";
  home.pine.routes = {r};
  pine::config::Route byTopic;  // a route by topic only names no source
  byTopic.name = "t";
  byTopic.topic = "idle/#";
  home.pine.routes.push_back(byTopic);

  struct Row { std::set<std::string> subscribed; std::vector<std::string> expected; };
  const Row rows[] = {
      {{}, {"routed", "always"}},
      {{"subscribed"}, {"subscribed", "routed", "always"}},
      {{"subscribed", "unknown"}, {"subscribed", "routed", "always"}},  // a name not configured starts nothing
      {{"always", "routed"}, {"routed", "always"}},                     // counted once
      {{"folder-subscribed"}, {"routed", "always", "folder-subscribed"}},  // every type is returned
      {{"idle"}, {"idle", "routed", "always"}},
  };
  for (const auto& row : rows) {
    CAPTURE(row.expected.size());
    CHECK(names(wantedSources(home, row.subscribed)) == row.expected);
  }
}

TEST_CASE("wanted: no subscription, no route, not always: nothing runs") {
  pine::config::Home home;
  home.pine.sources = {named("a"), named("b")};
  CHECK(wantedSources(home, {}).empty());
  CHECK(names(wantedSources(home, {"b"})) == std::vector<std::string>{"b"});
}
