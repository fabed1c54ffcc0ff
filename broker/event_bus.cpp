#include "broker/event_bus.h"

#include <kj/debug.h>
#include <openssl/rand.h>

#include "common/log.h"

namespace pine {

std::string newId(const char* prefix) {
  static unsigned counter = 0;
  unsigned char r[4];
  if (RAND_bytes(r, sizeof r) != 1) r[0] = r[1] = r[2] = r[3] = 0;
  char id[64];
  snprintf(id, sizeof id, "%s%llx-%x-%02x%02x%02x%02x", prefix, (unsigned long long)nowMs(), ++counter, r[0], r[1],
           r[2], r[3]);
  return id;
}

EventBus::EventBus(store::Store& store, Delivery deliver, size_t maxBatch)
    : store_(store), deliver_(std::move(deliver)), maxBatch_(maxBatch) {}

EventBus::~EventBus() {
  for (auto& p : queue_)
    if (p.fulfiller->isWaiting()) p.fulfiller->reject(KJ_EXCEPTION(DISCONNECTED, "the broker is stopping"));
}

kj::Promise<store::Event> EventBus::publish(store::Event draft) {
  if (draft.id.empty()) draft.id = newId("e");
  if (draft.timeMs == 0) draft.timeMs = nowMs();
  auto paf = kj::newPromiseAndFulfiller<store::Event>();
  queue_.push_back(Pending{std::move(draft), kj::mv(paf.fulfiller)});
  if (queue_.size() >= maxBatch_) {
    flush();
  } else if (!flushScheduled_) {
    // Everything published before the loop turns again goes into the same transaction.
    flushScheduled_ = true;
    flushTask_ = kj::evalLater([this]() {
                   flushScheduled_ = false;
                   flush();
                 }).eagerlyEvaluate([](kj::Exception&& e) { spdlog::error("events: {}", e.getDescription().cStr()); });
  }
  return kj::mv(paf.promise);
}

void EventBus::flush() {
  if (queue_.empty()) return;
  std::vector<Pending> batch;
  batch.swap(queue_);
  std::vector<store::Event> events;
  events.reserve(batch.size());
  for (auto& p : batch) events.push_back(p.event);
  try {
    store_.appendEvents(events);
  } catch (std::exception& e) {
    // Nothing of this batch was committed: nobody is told it was.
    spdlog::error("events: could not commit {} events: {}", batch.size(), e.what());
    for (auto& p : batch) p.fulfiller->reject(KJ_EXCEPTION(FAILED, "the event could not be stored", e.what()));
    return;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].fulfiller->fulfill(store::Event(events[i]));
    try {
      deliver_(events[i]);
    } catch (std::exception& e) {
      spdlog::error("events: delivering {} failed: {}", events[i].id, e.what());
    }
  }
}

}  // namespace pine
