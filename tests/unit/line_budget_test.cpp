// LineBudget (common/line_budget.h): so many lines a minute, then a count said once the minute is over.
#include <doctest/doctest.h>

#include "common/line_budget.h"

TEST_CASE("line budget: the first N of a minute, then counted; the count is given with the next minute's first line") {
  pine::LineBudget b(3);
  long long skipped = -1;
  long long t = 1'000'000;
  for (int i = 0; i < 3; ++i) {
    CHECK(b.take(t + i, &skipped));
    CHECK(skipped == 0);
  }
  for (int i = 0; i < 5; ++i) CHECK_FALSE(b.take(t + 100 + i, &skipped));
  CHECK(skipped == 0);
  CHECK_FALSE(b.take(t + 59'999, &skipped));  // still the same minute
  CHECK(b.take(t + 60'000, &skipped));
  CHECK(skipped == 6);
  CHECK(b.take(t + 60'001, &skipped));
  CHECK(skipped == 0);  // said once
  // A quiet minute after a full one: nothing to say.
  CHECK(b.take(t + 200'000, &skipped));
  CHECK(skipped == 0);
  // A clock that went back opens a new minute rather than keeping the budget shut.
  CHECK(b.take(t + 200'001, &skipped));
  CHECK(b.take(t + 200'002, &skipped));  // three used
  CHECK_FALSE(b.take(t + 200'003, &skipped));
  CHECK(b.take(t, &skipped));
  CHECK(skipped == 1);
}
