// broker/usage: a call's cost from models.yaml prices (cache prices included, a model without
// pricing unknown), its JSON form, and the `since` forms GET /v1/usage takes.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <time.h>

#include "broker/usage.h"

using pine::parseSince;
using pine::priceUsage;
using pine::usageJson;

TEST_CASE("usage: every kind of token at its own price; no pricing is an unknown cost") {
  pine::config::Model m;
  m.pricing = pine::config::Pricing{3, 15, 0.3, 3.75};
  pine::model::Usage turn{400, 100, 2000, 1000};
  auto u = priceUsage(turn, &m);
  CHECK(u.cost == doctest::Approx((400 * 3 + 100 * 15 + 2000 * 0.3 + 1000 * 3.75) / 1e6));
  CHECK(u.cacheRead == 2000);
  CHECK(u.cacheWrite == 1000);
  CHECK(u.costKnown());
  auto j = usageJson(u);
  CHECK(j["cost"].get<double>() == doctest::Approx(0.00705));
  CHECK_FALSE(j.contains("unpricedTokens"));

  pine::config::Model bare;
  auto none = priceUsage(turn, &bare);
  CHECK(none.cost == 0);
  CHECK(none.unpricedTokens == 3500);
  CHECK_FALSE(none.costKnown());
  CHECK(usageJson(none)["cost"].is_null());
  CHECK(priceUsage(turn, nullptr).unpricedTokens == 3500);  // a model that left the configuration

  // A sum of a priced and an unpriced call: unknown, with the known part beside it.
  auto both = u;
  both += none;
  auto bj = usageJson(both);
  CHECK(bj["cost"].is_null());
  CHECK(bj["pricedCost"].get<double>() == doctest::Approx(0.00705));
  CHECK(bj["unpricedTokens"] == 3500);
}

TEST_CASE("usage: since is a day from local midnight, or an ISO time with or without its zone") {
  const char* old = getenv("TZ");
  std::string saved = old ? old : "";
  setenv("TZ", "XYZ-01:00", 1);  // UTC+1
  tzset();
  std::string why;
  CHECK(parseSince("2026-12-03", why) == 1796252400000LL);  // 2026-12-02T23:00Z
  CHECK(parseSince("2026-12-03T14:30", why) == 1796304600000LL);  // 13:30Z
  CHECK(parseSince("2026-12-03T14:30:00Z", why) == 1796308200000LL);
  CHECK(parseSince("2026-12-03T14:30:00.250Z", why) == 1796308200250LL);
  CHECK(parseSince("2026-12-03T14:30+02:00", why) == 1796301000000LL);
  CHECK(parseSince("2026-12-03T14:30-0130", why) == 1796313600000LL);
  CHECK(parseSince("2024-02-29", why).has_value());
  for (const char* bad : {"", "yesterday", "2026-12-3", "2026-13-01", "2026-02-29", "2026-04-31", "2026-12-03T24:00",
                          "2026-12-03T10:60", "2026-12-03T10:00+25:00", "1969-12-31", "2026-12-03 junk"}) {
    INFO(bad);
    CHECK_FALSE(parseSince(bad, why).has_value());
    CHECK(why.find("since") != std::string::npos);
  }
  if (old) setenv("TZ", saved.c_str(), 1);
  else unsetenv("TZ");
  tzset();
}
