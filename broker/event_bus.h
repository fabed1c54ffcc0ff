// Publishing an event: checked by the caller, committed to the store, then
// handed on (routes, subscriptions, SSE listeners). Events published in one
// turn of the event loop are committed in one transaction (group commit), and
// nobody hears of an event before it is committed: an acknowledged event is
// never lost by a crash of the broker.
#pragma once
#include <kj/async.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "broker/store/store.h"

namespace pine {

class EventBus {
 public:
  // Called once per committed event, in commit order.
  using Delivery = std::function<void(const store::Event&)>;

  EventBus(store::Store& store, Delivery deliver, size_t maxBatch = 2000);
  ~EventBus();

  // Fills in id and time when empty; resolves with the committed event (seq set).
  kj::Promise<store::Event> publish(store::Event draft);
  size_t pending() const { return queue_.size(); }

 private:
  struct Pending {
    store::Event event;
    kj::Own<kj::PromiseFulfiller<store::Event>> fulfiller;
  };
  void flush();

  store::Store& store_;
  Delivery deliver_;
  size_t maxBatch_;
  std::vector<Pending> queue_;
  bool flushScheduled_ = false;
  kj::Maybe<kj::Promise<void>> flushTask_;
  unsigned counter_ = 0;
};

std::string newId(const char* prefix);

// An event as the control API lists it and the feed tells it (payload parsed back to JSON).
nlohmann::json eventJson(const store::Event& e);

}  // namespace pine
