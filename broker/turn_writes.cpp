#include "broker/turn_writes.h"

#include <kj/refcount.h>

#include <string>
#include <utility>
#include <vector>

namespace pine {

struct TurnWrites::State final : public kj::Refcounted {
  State(kj::Own<kj::AsyncIoStream> inner, kj::Timer& timer)
      : State(kj::mv(inner), timer, kj::newPromiseAndFulfiller<void>()) {}
  State(kj::Own<kj::AsyncIoStream> inner, kj::Timer& timer, kj::PromiseFulfillerPair<void> paf)
      : inner(kj::mv(inner)), timer(timer), giveUp(kj::mv(paf.fulfiller)), gaveUp(paf.promise.fork()) {}
  kj::Own<kj::AsyncIoStream> inner;
  kj::Timer& timer;
  std::string waiting;             // taken, not yet written
  bool scheduled = false, writing = false, shutdownAsked = false, abandoned = false;
  kj::Maybe<kj::Exception> error;  // a write failed: every later one fails with it
  std::vector<kj::Own<kj::PromiseFulfiller<void>>> untilWritten;  // writers past kMaxWaiting
  kj::Own<kj::PromiseFulfiller<void>> giveUp;  // ends a drain that outlived the wrapper too long
  kj::ForkedPromise<void> gaveUp;
};

namespace {

using State = TurnWrites::State;

void settled(State& s) {
  s.writing = false;
  for (auto& f : std::exchange(s.untilWritten, {})) {
    KJ_IF_MAYBE(e, s.error) f->reject(kj::cp(*e));
    else f->fulfill();
  }
  if (s.shutdownAsked && s.error == nullptr) s.inner->shutdownWrite();
  if (s.abandoned) s.inner = nullptr;  // the wrapper is gone: close the socket now
}

// Writes what is waiting, then whatever was taken meanwhile, until nothing waits.
kj::Promise<void> drain(State& s) {
  s.scheduled = false;
  if (s.waiting.empty() || s.error != nullptr || !s.inner) {
    if (s.inner) settled(s);
    return kj::READY_NOW;
  }
  s.writing = true;
  auto text = kj::heap<std::string>(std::exchange(s.waiting, {}));
  auto& bytes = *text;
  // evalNow: a socket's write throws at once (EPIPE) as often as it rejects later.
  auto written = kj::evalNow([&s, &bytes]() { return s.inner->write(bytes.data(), bytes.size()); }).attach(kj::mv(text));
  return written.then([&s]() { return drain(s); },
                      [&s](kj::Exception&& e) {
                        s.error = kj::mv(e);
                        s.waiting.clear();
                        settled(s);
                      });
}

void schedule(State& s) {
  if (s.scheduled || s.writing) return;  // a write in flight takes this too when it is done
  s.scheduled = true;
  // Once every continuation of this turn has run (an answer's head and body, other answers'
  // parts on this connection): one write.
  kj::evalLast([&s]() { return drain(s); })
      .exclusiveJoin(s.gaveUp.addBranch())
      .attach(kj::addRef(s))
      .detach([](kj::Exception&&) {});
}

}  // namespace

TurnWrites::TurnWrites(kj::Own<kj::AsyncIoStream> inner, kj::Timer& timer)
    : state_(kj::refcounted<State>(kj::mv(inner), timer)) {}

TurnWrites::~TurnWrites() {
  State& s = *state_;
  if (!s.scheduled && !s.writing) return;  // nothing taken is unwritten: the socket closes with s
  // The drain holds the state (and the socket) until what was taken is written, or kDrainTime.
  s.abandoned = true;
  s.timer.afterDelay(kDrainTime)
      .then([&s]() {
        if (s.giveUp->isWaiting()) s.giveUp->fulfill();
      })
      .exclusiveJoin(s.gaveUp.addBranch())
      .attach(kj::addRef(s))
      .detach([](kj::Exception&&) {});
}

kj::Promise<size_t> TurnWrites::tryRead(void* buffer, size_t minBytes, size_t maxBytes) {
  return state_->inner->tryRead(buffer, minBytes, maxBytes);
}

kj::Maybe<uint64_t> TurnWrites::tryGetLength() { return state_->inner->tryGetLength(); }

kj::Promise<void> TurnWrites::write(const void* buffer, size_t size) {
  kj::ArrayPtr<const kj::byte> piece(static_cast<const kj::byte*>(buffer), size);
  return write(kj::arrayPtr(&piece, 1));
}

kj::Promise<void> TurnWrites::write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) {
  State& s = *state_;
  KJ_IF_MAYBE(e, s.error) return kj::cp(*e);
  for (auto& p : pieces) s.waiting.append(reinterpret_cast<const char*>(p.begin()), p.size());
  schedule(s);
  if (s.waiting.size() <= kMaxWaiting) return kj::READY_NOW;
  auto paf = kj::newPromiseAndFulfiller<void>();
  s.untilWritten.push_back(kj::mv(paf.fulfiller));
  return kj::mv(paf.promise);
}

kj::Promise<void> TurnWrites::whenWriteDisconnected() { return state_->inner->whenWriteDisconnected(); }

void TurnWrites::shutdownWrite() {
  State& s = *state_;
  if (s.scheduled || s.writing) s.shutdownAsked = true;  // after what waits
  else s.inner->shutdownWrite();
}

kj::Maybe<int> TurnWrites::getFd() const { return state_->inner->getFd(); }

}  // namespace pine
