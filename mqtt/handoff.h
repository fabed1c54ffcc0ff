// The one hand-off from the session's own thread (libmosquitto's) to the event loop that
// talks to the broker: messages and state changes queue here under a mutex, and the loop is
// woken through a cross-thread promise. Bounded: a server that floods costs at most
// kMaxQueuedBytes of memory; what does not fit is counted and reported, not queued.
#pragma once
#include <kj/async.h>

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace pine::mqtt {

struct Heard {
  bool isStatus = false;
  std::string topic;    // a message's topic
  std::string payload;  // its bytes
  bool connected = false, refused = false;
  std::string text;     // a state change, said in words
};

class Handoff {
 public:
  static constexpr size_t kMaxQueuedBytes = 16u << 20;

  // Any thread. A message that does not fit is dropped and counted; a status always fits.
  void push(Heard item);
  // Event-loop thread only: everything queued, as soon as there is something.
  kj::Promise<std::vector<Heard>> next();
  // Messages dropped since the last call (the queue was full).
  size_t takeDropped();

 private:
  std::vector<Heard> takeAll();
  std::mutex mu_;
  std::vector<Heard> items_;
  size_t bytes_ = 0, dropped_ = 0;
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> waiter_;
};

}  // namespace pine::mqtt
