// Publishing an event: checked by the caller, committed to the store, then
// handed on (routes, subscriptions, SSE listeners). Events are committed in
// groups (one transaction each), and nobody hears of an event before it is
// committed: an acknowledged event is never lost by a crash of the broker.
//
// How a group forms: everything published before the event loop next waits for
// I/O, and then whatever each further poll of the loop (without sleeping) brings,
// for as long as polls bring more, and until as many are pending as the last
// group held when that one was recent (its senders, each waiting for its answer
// as webhooks and devices do, are coming back), and while senders answered moments
// ago have not sent again (countReturning: the control API tells, so that senders
// answered by two commits rejoin one); within a bounded wait (Limits).
// Single events from concurrent senders then share a commit instead of each
// paying for one; a lone sender costs one empty poll. At most maxBatch events are
// pending: reaching it commits at once, so memory stays bounded whatever a flood
// sends, and a flood's events and everyone else's are committed in arrival order.
#pragma once
#include <kj/async.h>
#include <kj/time.h>
#include <kj/timer.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "broker/store/store.h"

namespace pine {

struct EventBusLimits {
  size_t maxBatch = 2000;                   // events pending at most; reaching it commits at once
  kj::Duration maxWait = kj::MILLISECONDS;  // how long a group gathers at most
  unsigned maxPolls = 1000;                 // and in polls of the loop
};

std::string eventJsonText(const store::Event& e);  // below

// A committed event's JSON text (eventJsonText), written the first time it is asked for and then
// shared: the feed's item and the answer to the event's publisher are the same text.
class EventText {
 public:
  explicit EventText(const store::Event& e) : event_(e) {}
  const std::string& get() {
    if (!written_) text_ = eventJsonText(event_), written_ = true;
    return text_;
  }
  std::string take() { return get(), std::move(text_); }

 private:
  const store::Event& event_;
  std::string text_;
  bool written_ = false;
};

class EventBus final : private kj::TaskSet::ErrorHandler {
 public:
  // Called once per committed event, in commit order, with its text (written only if asked for).
  using Delivery = std::function<void(const store::Event&, EventText&)>;

  using Limits = EventBusLimits;
  struct Stats {
    unsigned long long commits = 0, events = 0;
    size_t largestBatch = 0;
  };

  // Without a timer, a group is what one turn of the loop published (no waiting for senders).
  EventBus(store::Store& store, Delivery deliver, kj::Timer* timer = nullptr, Limits limits = {});
  ~EventBus();
  EventBus(const EventBus&) = delete;
  EventBus& operator=(const EventBus&) = delete;

  // Fills in id and time when empty; resolves with the committed event (seq set).
  kj::Promise<store::Event> publish(store::Event draft);
  // The same, resolving with the committed event's JSON text (the text delivery shared).
  kj::Promise<std::string> publishText(store::Event draft);
  size_t pending() const { return queue_.size(); }
  // How many senders were answered moments ago and have not sent again (ControlApi::returningSenders).
  void countReturning(std::function<size_t()> returning) { returning_ = std::move(returning); }
  const Stats& stats() const { return stats_; }

 private:
  struct Pending {
    store::Event event;
    kj::Own<kj::PromiseFulfiller<store::Event>> fulfiller;  // publish()'s, or
    kj::Own<kj::PromiseFulfiller<std::string>> text;        // publishText()'s
    void reject(kj::Exception&& e);
  };
  void enqueue(Pending p);
  // Runs when the loop is about to wait: commits now, lets it poll once more for senders, or
  // sleeps until an answered sender publishes again (at most until the group's time is up).
  kj::Promise<void> gather(unsigned polls, unsigned long long seen);
  // Whether the group waits on, and for what: arrivals (polled) or only answered senders (slept on).
  enum class Gather { Commit, Poll, AwaitReturns };
  Gather nextStep(unsigned polls, unsigned long long seen) const;
  void flush();
  void taskFailed(kj::Exception&& e) override;

  store::Store& store_;
  Delivery deliver_;
  kj::Timer* timer_;
  Limits limits_;
  std::function<size_t()> returning_;
  std::vector<Pending> queue_;
  unsigned long long published_ = 0;
  size_t lastBatch_ = 0;  // the size of the last group: how many senders may be coming back
  kj::TimePoint lastCommit_ = kj::origin<kj::TimePoint>(), groupStart_ = kj::origin<kj::TimePoint>();
  bool gathering_ = false;
  kj::Maybe<kj::Own<kj::PromiseFulfiller<void>>> arrival_;  // set while a gathering sleeps
  Stats stats_;
  kj::TaskSet tasks_;  // the gathering; last, so that it is cancelled first
};

std::string newId(const char* prefix);

// An event as the control API lists it and the feed tells it (payload parsed back to JSON).
nlohmann::json eventJson(const store::Event& e);
// The same object written straight as JSON text on one line, the payload spliced in as stored
// (the store holds only valid JSON text; a newline in it, whitespace, becomes a space):
// eventJson(e).dump() byte for byte when the payload is as nlohmann writes it (the control
// API's are), without building the object or parsing the payload again; for the answer to each
// single event POSTed and the feed's event items (bench-events).
std::string eventJsonText(const store::Event& e);

}  // namespace pine
