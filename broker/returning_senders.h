// Which senders are about to send again. A webhook or a device that sends one event a request
// waits for its answer and then sends the next; the event bus (event_bus.h) holds a group open
// while such senders, answered moments ago, have not sent again, so that senders answered by two
// different commits rejoin one commit instead of staying split into two groups that each pay for
// one (what happened under load: 16 senders settled into groups of about 6 and 10).
//
// A connection counts from the moment its event's answer went out until its next bytes arrive,
// it closes, or `within` has passed (a sender that keeps its connection open and sends a minute
// later delays nobody for longer than that).
#pragma once
#include <kj/list.h>
#include <kj/time.h>
#include <kj/timer.h>

#include <cstddef>

namespace pine {

class ReturningSenders {
 public:
  // One per connection; leaves the count when it is destroyed.
  class Sender {
   public:
    explicit Sender(ReturningSenders& all) : all_(all) {}
    ~Sender() { all_.cameBack(*this); }
    Sender(const Sender&) = delete;
    Sender& operator=(const Sender&) = delete;

   private:
    friend class ReturningSenders;
    ReturningSenders& all_;
    kj::TimePoint answeredAt_ = kj::origin<kj::TimePoint>();
    kj::ListLink<Sender> link_;  // in the list itself: an answer allocates nothing
  };

  ReturningSenders(const kj::Timer& timer, kj::Duration within) : timer_(timer), within_(within) {}
  ReturningSenders(const ReturningSenders&) = delete;
  ReturningSenders& operator=(const ReturningSenders&) = delete;

  // The answer to the sender's event went out now.
  void answered(Sender& s);
  // The sender's next bytes arrived (or it is gone): it no longer counts.
  void cameBack(Sender& s);
  // Senders answered within `within` that have not sent again.
  size_t count();

 private:
  const kj::Timer& timer_;
  kj::Duration within_;
  kj::List<Sender, &Sender::link_> waiting_;  // in the order they were answered: the oldest first
};

}  // namespace pine
