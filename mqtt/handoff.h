// The one hand-off from the session's own thread (libmosquitto's) to the event loop that
// talks to the broker. State changes queue here; messages come as a batch (what one read of
// the socket brought), and the session thread waits in deliver() until the loop says the
// broker committed them: only then may the session acknowledge them to the MQTT server. One
// batch at a time, capped by the session, so memory is bounded by the batch, and a slow store
// slows the session (the server keeps what is not acknowledged) instead of growing a queue.
#pragma once
#include <kj/async.h>

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace pine::mqtt {

struct Heard {
  std::string topic;    // a message's topic
  std::string payload;  // its bytes
  bool retained = false;  // the server's stored message, sent for a (new) subscription
};

struct StatusNote {
  bool connected = false, refused = false;
  std::string text;  // a state change, said in words
};

// What the loop takes at once: the state changes so far, then at most one batch of messages.
struct Taken {
  std::vector<StatusNote> notes;
  std::optional<std::vector<Heard>> batch;
};

class Handoff {
 public:
  // Any thread. A state change; always queued (they are few).
  void note(StatusNote n);
  // Session thread: hands a batch over and waits until the loop calls done(). True when the
  // broker committed every message; false when it did not, or when stop() was called.
  bool deliver(std::vector<Heard> batch);
  // Any thread: deliver() returns false from now on, at once.
  void stop();

  // Event-loop thread only: what is queued, as soon as there is something.
  kj::Promise<Taken> next();
  // Event-loop thread: the batch taken last was committed (or not).
  void done(bool committed);

 private:
  bool ready() const { return !notes_.empty() || batch_.has_value(); }
  Taken take();
  void wakeLoop(std::unique_lock<std::mutex>& lock);

  std::mutex mu_;
  std::condition_variable answered_;
  std::vector<StatusNote> notes_;
  std::optional<std::vector<Heard>> batch_;  // handed over, not yet taken by the loop
  bool waiting_ = false;                     // a deliver() waits for done()
  std::optional<bool> answer_;
  bool stopped_ = false;
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> waiter_;
};

}  // namespace pine::mqtt
