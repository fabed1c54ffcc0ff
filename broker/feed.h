// A fan-out of live notifications (committed events, task progress,
// approvals) to whoever listens: SSE streams of the control API, a waiting
// `pinectl send`. Each subscriber has a bounded queue (items and bytes): one
// that does not keep up is dropped with a final {"kind":"overflow"}, never
// slowing the broker.
#pragma once
#include <kj/async.h>

#include <deque>
#include <functional>
#include <list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace pine {

class Feed {
 public:
  using Filter = std::function<bool(const nlohmann::json&)>;

  class Subscription {
   public:
    ~Subscription();
    KJ_DISALLOW_COPY(Subscription);
    // The next notification that passed the filter; {"kind":"overflow"} once, after which it is closed.
    kj::Promise<nlohmann::json> next();
    // The next queued notification without waiting, or nullopt when none is queued.
    std::optional<nlohmann::json> tryNext();
    // Resolves once a notification is queued, consuming nothing: unlike next(), it can be raced
    // against a timer or another promise and cancelled without losing an item. Then use tryNext().
    kj::Promise<void> ready();

   private:
    friend class Feed;
    Subscription(Feed& feed, Filter filter, size_t maxQueued, size_t maxBytes);
    void push(nlohmann::json item);  // one that passed the filter
    static size_t weight(const nlohmann::json& item);
    void wakeReady();
    Feed* feed_;
    Filter filter_;
    size_t maxQueued_, maxBytes_;
    size_t queuedBytes_ = 0;  // what the queued items weigh (their event text, mostly)
    std::deque<nlohmann::json> queue_;
    kj::Own<kj::PromiseFulfiller<nlohmann::json>> waiter_;
    kj::Own<kj::PromiseFulfiller<void>> readyWaiter_;
    bool overflowed_ = false;
  };

  Feed() = default;
  ~Feed();
  KJ_DISALLOW_COPY(Feed);

  // At most maxQueued items, weighing at most maxBytes (large events: 1024 of 900 KB each held
  // 900 MB per reader that did not read).
  kj::Own<Subscription> subscribe(Filter filter, size_t maxQueued = 1024, size_t maxBytes = 16u << 20);
  void publish(nlohmann::json item);
  size_t subscribers() const { return subs_.size(); }

 private:
  friend class Subscription;
  std::list<Subscription*> subs_;
};

// MQTT-style topic filter: '+' matches one level, '#' (last) the rest, including none.
bool topicMatches(const std::string& filter, const std::string& topic);
// Why `filter` can match nothing as the owner meant it ('#' not alone at the end, '+' not alone
// in its level), or nothing when it is well formed.
std::optional<std::string> filterProblem(const std::string& filter);

// A committed event as the feed carries it: {"kind": "event", "topic", "seq", "text"}, the text
// being the event's JSON (no newline in it), written once whoever listens; GET /v1/events/stream
// sends it as it is.
nlohmann::json eventFeedItem(const std::string& topic, long long seq, std::string text);

}  // namespace pine
