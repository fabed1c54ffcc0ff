#include <doctest/doctest.h>

#include "supervisor/backoff.h"

TEST_CASE("restart backoff doubles from the first delay up to the cap") {
  pine::Backoff b(100, 1000, 60000);
  CHECK(b.nextDelay(0) == 100);
  CHECK(b.nextDelay(0) == 200);
  CHECK(b.nextDelay(0) == 400);
  CHECK(b.nextDelay(0) == 800);
  CHECK(b.nextDelay(0) == 1000);
  CHECK(b.nextDelay(0) == 1000);  // capped, however often it crashes
}

TEST_CASE("a child that stayed up long enough is forgiven its earlier crashes") {
  pine::Backoff b(100, 10000, 5000);
  b.nextDelay(0);
  b.nextDelay(0);
  CHECK(b.nextDelay(10) == 400);
  CHECK(b.nextDelay(6000) == 100);
}
