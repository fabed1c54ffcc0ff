#include "broker/returning_senders.h"

namespace pine {

void ReturningSenders::answered(Sender& s) {
  cameBack(s);  // answered again: it moves to the end, with the new time
  s.answeredAt_ = timer_.now();
  s.at_ = waiting_.insert(waiting_.end(), &s);
  s.listed_ = true;
}

void ReturningSenders::cameBack(Sender& s) {
  if (!s.listed_) return;
  waiting_.erase(s.at_);
  s.listed_ = false;
}

size_t ReturningSenders::count() {
  // Answered in time order, so the ones that waited too long are at the front.
  kj::TimePoint now = timer_.now();
  while (!waiting_.empty() && now - waiting_.front()->answeredAt_ > within_) cameBack(*waiting_.front());
  return waiting_.size();
}

}  // namespace pine
