#include "broker/event_bus.h"

#include <kj/debug.h>
#include <openssl/rand.h>

#include "common/log.h"

namespace pine {

std::string newId(const char* prefix) {
  // One random value per process, then a counter: unique, unguessable across restarts, and cheap
  // enough to give every event its own id.
  static const std::string processPart = [] {
    unsigned char r[6];
    if (RAND_bytes(r, sizeof r) != 1) throw std::runtime_error("no randomness for ids");
    char out[16];
    snprintf(out, sizeof out, "%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5]);
    return std::string(out);
  }();
  static unsigned long long counter = 0;
  char id[96];
  snprintf(id, sizeof id, "%s%llx-%s-%llx", prefix, (unsigned long long)nowMs(), processPart.c_str(), ++counter);
  return id;
}

nlohmann::json eventJson(const store::Event& e) {
  nlohmann::json ev = {{"seq", e.seq},       {"id", e.id},       {"topic", e.topic}, {"time", isoTime(e.timeMs)},
                       {"source", e.source}, {"trust", e.trust}, {"hops", e.hops}};
  auto payload = nlohmann::json::parse(e.payload, nullptr, false);
  ev["payload"] = payload.is_discarded() ? nlohmann::json(e.payload) : payload;
  return ev;
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
    // Everything published before the loop next waits for I/O goes into the same transaction:
    // evalLast runs once every ready continuation (other requests read in the same wake-up) has run.
    flushScheduled_ = true;
    flushTask_ = kj::evalLast([this]() {
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
