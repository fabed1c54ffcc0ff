#include "broker/store/checks.h"

#include <algorithm>
#include <cmath>

#include "broker/store/rows.h"

namespace pine::store::detail {

void requireNonEmpty(const std::string& value, const std::string& what) {
  if (value.empty()) throw StoreError(what + " is empty; it is required");
}

void requireOneOf(const std::string& value, std::initializer_list<const char*> allowed, const std::string& what) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return;
    list += list.empty() ? "" : ", ";
    list += a;
  }
  // The value is a short keyword, never content, so it may be quoted (cut in case it is not).
  throw StoreError(what + " '" + value.substr(0, 40) + "' is not one of: " + list);
}

void requireUsage(const Usage& u, const std::string& what) {
  if (u.tokensIn < 0 || u.tokensOut < 0 || u.cacheRead < 0 || u.cacheWrite < 0 || u.unpricedTokens < 0)
    throw StoreError(what + ": a token count is negative");
  if (!std::isfinite(u.cost) || u.cost < 0) throw StoreError(what + ": the cost is negative or not a number");
}

std::optional<std::string> prefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    auto last = (unsigned char)end.back();
    if (last != 0xff) {
      end.back() = char(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::nullopt;
}

int clampLimit(int limit) { return std::clamp(limit, 1, 10000); }

}  // namespace pine::store::detail
