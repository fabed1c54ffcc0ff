// ReturningSenders (broker/returning_senders.h) on a timer the test moves by hand: who counts, and
// for how long.
#include <doctest/doctest.h>
#include <kj/timer.h>

#include <memory>

#include "broker/returning_senders.h"

using pine::ReturningSenders;

TEST_CASE("returning senders: answered ones count until they send again, go away, or their time passes") {
  kj::TimerImpl timer(kj::origin<kj::TimePoint>());
  ReturningSenders all(timer, 10 * kj::MILLISECONDS);
  ReturningSenders::Sender a(all), b(all);
  CHECK(all.count() == 0);  // connections that were never answered
  all.answered(a);
  all.answered(b);
  CHECK(all.count() == 2);
  all.answered(a);  // answered again before it was seen back: still one sender
  CHECK(all.count() == 2);
  all.cameBack(b);
  CHECK(all.count() == 1);
  all.cameBack(b);  // twice is harmless
  CHECK(all.count() == 1);
  {
    ReturningSenders::Sender c(all);
    all.answered(c);
    CHECK(all.count() == 2);
  }  // c's connection closed
  CHECK(all.count() == 1);
}

TEST_CASE("returning senders: the oldest stop counting first, each after its own time") {
  kj::TimerImpl timer(kj::origin<kj::TimePoint>());
  ReturningSenders all(timer, 10 * kj::MILLISECONDS);
  auto a = std::make_unique<ReturningSenders::Sender>(all);
  ReturningSenders::Sender b(all);
  all.answered(*a);
  timer.advanceTo(timer.now() + 6 * kj::MILLISECONDS);
  all.answered(b);
  CHECK(all.count() == 2);
  timer.advanceTo(timer.now() + 5 * kj::MILLISECONDS);  // a: 11 ms ago, b: 5 ms ago
  CHECK(all.count() == 1);
  a.reset();  // gone after it stopped counting: nothing to undo
  CHECK(all.count() == 1);
  timer.advanceTo(timer.now() + 6 * kj::MILLISECONDS);
  CHECK(all.count() == 0);
  all.answered(b);  // answered again: counts from now
  CHECK(all.count() == 1);
}
