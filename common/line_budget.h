// How many lines of one kind a log takes in a minute. Refusals of outside requests are logged
// (and audited) one a request, so without a budget a stranger who sends bad requests as fast as
// the socket takes them writes megabytes a second into files pine never rotates. Past the budget
// the lines are counted, and the count is said with the next line after the minute.
#pragma once

namespace pine {

class LineBudget {
 public:
  explicit LineBudget(long long perMinute) : perMinute_(perMinute) {}

  // Whether the line at `nowMs` may be written. When a minute with lines over the budget has
  // ended, `*skipped` is set to their count (else 0): the caller says it first.
  bool take(long long nowMs, long long* skipped) {
    *skipped = 0;
    if (nowMs - minuteStart_ >= 60000 || nowMs < minuteStart_) {
      *skipped = skipped_;
      skipped_ = 0;
      used_ = 0;
      minuteStart_ = nowMs;
    }
    if (used_ < perMinute_) {
      ++used_;
      return true;
    }
    ++skipped_;
    return false;
  }
  long long perMinute() const { return perMinute_; }

 private:
  long long perMinute_;
  long long minuteStart_ = -60000;  // the first line opens a minute
  long long used_ = 0, skipped_ = 0;
};

}  // namespace pine
