// When to restart a child that died: fast at first, then slower, capped; a child
// that stayed up long enough is forgiven its earlier crashes.
#pragma once
#include <algorithm>
#include <cstdint>

namespace pine {

class Backoff {
 public:
  Backoff(int64_t firstMs = 100, int64_t capMs = 10000, int64_t stableMs = 60000)
      : first_(firstMs), cap_(capMs), stable_(stableMs) {}

  // The child died after running `upMs`: how long to wait before the next start.
  int64_t nextDelay(int64_t upMs) {
    if (upMs >= stable_) failures_ = 0;
    int64_t delay = first_;
    for (int i = 0; i < failures_ && delay < cap_; ++i) delay *= 2;
    ++failures_;
    return std::min(delay, cap_);
  }
  int failures() const { return failures_; }

 private:
  int64_t first_, cap_, stable_;
  int failures_ = 0;
};

}  // namespace pine
