// Routing (layer 2): routes, trust, the untrusted session.
#include "broker/policy/routing.h"

#include "tests/policy/helpers.h"

using namespace policy_test;
using pine::policy::EventFacts;
using pine::policy::planRun;
using pine::policy::routeEvent;

namespace {

config::Route route(const std::string& name, const std::string& source, const std::string& topic,
                    const std::string& agentId, std::optional<Trust> trust = std::nullopt) {
  config::Route r;
  r.name = name;
  r.source = source;
  r.topic = topic;
  r.agent = agentId;
  r.trust = trust;
  r.prompt = "handle " + name;
  return r;
}

config::Home routedHome() {
  auto h = home({agent("main"), agent("house"), agent("mail")});
  h.pine.routes = {
      route("cams", "mqtt", "cam/+/motion", "house"),
      route("mine", "myhook", "", "house", Trust::Owner),
      route("anyhouse", "", "house/#", "main"),
      route("fromagent", "agent:scout", "", "mail", Trust::Owner),
      route("lowered", "owner-src", "", "mail", Trust::Untrusted),
      route("ghost", "mqtt", "#", "nobody"),
  };
  return h;
}

std::vector<std::string> names(const std::vector<pine::policy::RouteTarget>& ts) {
  std::vector<std::string> out;
  for (const auto& t : ts) out.push_back(t.route + ">" + t.agent);
  return out;
}

}  // namespace

TEST_CASE("routing: source and topic select routes") {
  auto h = routedHome();
  CHECK(names(routeEvent(h, EventFacts{"cam/door/motion", "mqtt", Trust::Untrusted, 0})) ==
        std::vector<std::string>{"cams>house"});
  CHECK(names(routeEvent(h, EventFacts{"cam/door/motion", "other", Trust::Untrusted, 0})).empty());
  CHECK(names(routeEvent(h, EventFacts{"cam/door/sound", "mqtt", Trust::Untrusted, 0})).empty());
  CHECK(names(routeEvent(h, EventFacts{"house/lamp", "anything", Trust::Untrusted, 0})) ==
        std::vector<std::string>{"anyhouse>main"});
  auto t = routeEvent(h, EventFacts{"cam/door/motion", "mqtt", Trust::Untrusted, 0});
  REQUIRE(t.size() == 1);
  CHECK(t[0].prompt == "handle cams");
}

TEST_CASE("routing: trust of the run a route starts") {
  auto h = routedHome();
  auto one = [&](EventFacts e) {
    auto t = routeEvent(h, e);
    REQUIRE(t.size() == 1);
    return t[0].trust;
  };
  // Unset: the event's own trust.
  CHECK(one({"cam/a/motion", "mqtt", Trust::Untrusted, 0}) == Trust::Untrusted);
  CHECK(one({"cam/a/motion", "mqtt", Trust::Owner, 0}) == Trust::Owner);
  // "trust: owner" upgrades a source's event.
  CHECK(one({"x", "myhook", Trust::Untrusted, 0}) == Trust::Owner);
  // ...but never an agent's untrusted (tainted) publish.
  CHECK(one({"x", "agent:scout", Trust::Untrusted, 0}) == Trust::Untrusted);
  CHECK(one({"x", "agent:scout", Trust::Owner, 0}) == Trust::Owner);
  // "trust: untrusted" lowers.
  CHECK(one({"x", "owner-src", Trust::Owner, 0}) == Trust::Untrusted);
}

TEST_CASE("routing: planRun puts untrusted runs in <agent>~u or refuses them") {
  auto a = agent("house");
  auto p = planRun(a, Trust::Owner, "house-kitchen");
  CHECK(p.accepted);
  CHECK(p.session == "house-kitchen");
  CHECK(planRun(a, Trust::Owner, "").session == "house");
  auto u = planRun(a, Trust::Untrusted, "house");  // asked for the owner's conversation: not given
  CHECK(u.accepted);
  CHECK(u.session == "house~u");
  CHECK(u.trust == Trust::Untrusted);
  a.untrusted.accept = false;
  auto r = planRun(a, Trust::Untrusted, "house");
  CHECK_FALSE(r.accepted);
  CHECK(r.reason.find("untrusted: false") != std::string::npos);
  CHECK(planRun(a, Trust::Owner, "house").accepted);
  CHECK(pine::policy::untrustedSession("main") == "main~u");
}
