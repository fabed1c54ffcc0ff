// Model usage in the broker: a call's tokens priced from models.yaml (cache prices included),
// the JSON form every route and feed line uses, the machine's local day that budgets and
// GET /v1/usage count by, and the times `since` takes. Touches nothing; pure functions.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "broker/store/rows.h"
#include "config/model.h"
#include "providers/types.h"

namespace pine {

// One model call's usage and its cost: each kind of token at its price per million. A model
// without pricing (nullptr or no `pricing`): cost 0 and every token counted as unpriced, so
// that the sums say "unknown" rather than 0.
store::Usage priceUsage(const model::Usage& turn, const config::Model* model);

// {"input", "output", "cacheRead", "cacheWrite", "cost": number or null when unknown,
//  "unpricedTokens" and "pricedCost" (the known part) only when it is unknown}.
nlohmann::json usageJson(const store::Usage& u);

// Local midnight of today (the time zone this process reads), in unix ms.
long long startOfTodayMs();

// `since` as GET /v1/usage takes it: YYYY-MM-DD (local midnight of that day), or an ISO time
// YYYY-MM-DDTHH:MM[:SS[.fff]] with Z or +HH:MM (without one: local time). nullopt with `why`.
std::optional<long long> parseSince(const std::string& since, std::string& why);

}  // namespace pine
