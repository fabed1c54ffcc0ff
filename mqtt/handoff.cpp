#include "mqtt/handoff.h"

#include <utility>

namespace pine::mqtt {

void Handoff::wakeLoop(std::unique_lock<std::mutex>& lock) {
  auto wake = kj::mv(waiter_);
  lock.unlock();
  if (wake) wake->fulfill();
}

void Handoff::note(StatusNote n) {
  std::unique_lock<std::mutex> lock(mu_);
  notes_.push_back(std::move(n));
  wakeLoop(lock);
}

bool Handoff::deliver(std::vector<Heard> batch) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopped_) return false;
  batch_ = std::move(batch);
  waiting_ = true;
  answer_.reset();
  wakeLoop(lock);
  lock.lock();
  answered_.wait(lock, [this] { return answer_.has_value() || stopped_; });
  waiting_ = false;
  batch_.reset();  // when stopped before the loop took it
  return !stopped_ && answer_.value_or(false);
}

void Handoff::stop() {
  std::unique_lock<std::mutex> lock(mu_);
  stopped_ = true;
  answered_.notify_all();
}

void Handoff::done(bool committed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (waiting_) answer_ = committed;
  answered_.notify_all();
}

Taken Handoff::take() {
  std::lock_guard<std::mutex> lock(mu_);
  Taken t;
  t.notes = std::exchange(notes_, {});
  t.batch = std::exchange(batch_, std::nullopt);
  return t;
}

kj::Promise<Taken> Handoff::next() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ready()) {
      auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
      waiter_ = kj::mv(paf.fulfiller);
      return paf.promise.then([this]() { return next(); });
    }
  }
  return take();
}

}  // namespace pine::mqtt
