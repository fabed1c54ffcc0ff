#include "mqtt/handoff.h"

#include <utility>

namespace pine::mqtt {

void Handoff::push(Heard item) {
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t size = item.topic.size() + item.payload.size();
    if (!item.isStatus && bytes_ + size > kMaxQueuedBytes) {
      ++dropped_;
      return;
    }
    bytes_ += size;
    items_.push_back(std::move(item));
    wake = kj::mv(waiter_);
  }
  if (wake) wake->fulfill();
}

std::vector<Heard> Handoff::takeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  bytes_ = 0;
  return std::exchange(items_, {});
}

size_t Handoff::takeDropped() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(dropped_, 0);
}

kj::Promise<std::vector<Heard>> Handoff::next() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (items_.empty()) {
      auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
      waiter_ = kj::mv(paf.fulfiller);
      return paf.promise.then([this]() { return takeAll(); });
    }
  }
  return takeAll();
}

}  // namespace pine::mqtt
