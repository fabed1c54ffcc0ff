#include "broker/returning_senders.h"

namespace pine {

void ReturningSenders::answered(Sender& s) {
  cameBack(s);  // answered again: it moves to the end, with the new time
  s.answeredAt_ = timer_.now();
  waiting_.add(s);
}

void ReturningSenders::cameBack(Sender& s) {
  if (s.link_.isLinked()) waiting_.remove(s);
}

size_t ReturningSenders::count() {
  // Answered in time order, so the ones that waited too long are at the front.
  kj::TimePoint now = timer_.now();
  while (!waiting_.empty() && now - waiting_.front().answeredAt_ > within_) cameBack(waiting_.front());
  return waiting_.size();
}

}  // namespace pine
