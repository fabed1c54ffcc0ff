#include "broker/event_bus.h"

#include <kj/debug.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>

#include "common/json_depth.h"
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
  // "<prefix><ms in hex>-<process part>-<counter in hex>", the hex written by hand (snprintf was
  // about 1 % of the broker's time under single events).
  // Written into a buffer, then made a string once.
  char buf[128];
  size_t at = 0;
  auto hex = [&](unsigned long long v) {
    char digits[16];
    int n = 0;
    do digits[n++] = "0123456789abcdef"[v & 15]; while ((v >>= 4) != 0);
    while (n > 0) buf[at++] = digits[--n];
  };
  size_t p = std::min(std::strlen(prefix), sizeof buf - 64);  // prefixes are a letter or a word
  std::memcpy(buf, prefix, p);
  at = p;
  hex((unsigned long long)nowMs());
  buf[at++] = '-';
  std::memcpy(buf + at, processPart.data(), processPart.size());  // 12 characters
  at += processPart.size();
  buf[at++] = '-';
  hex(++counter);
  return std::string(buf, at);
}

nlohmann::json eventJson(const store::Event& e) {
  nlohmann::json ev = {{"seq", e.seq},       {"id", e.id},       {"topic", e.topic}, {"time", isoTime(e.timeMs)},
                       {"source", e.source}, {"trust", e.trust}, {"hops", e.hops}};
  // As text when nested deeper than intake allows (stored before it refused such bodies): a
  // parsed copy of it would recurse past the stack.
  auto payload = jsonNestingDepth(e.payload) > 64 ? nlohmann::json(nlohmann::json::value_t::discarded)
                                                  : nlohmann::json::parse(e.payload, nullptr, false);
  ev["payload"] = payload.is_discarded() ? nlohmann::json(e.payload) : payload;
  return ev;
}

namespace {

// A JSON string as nlohmann's dump() writes it (UTF-8 kept, control characters escaped).
void appendQuoted(std::string& out, const std::string& s) {
  out += '"';
  // Runs that need no escape are copied whole (ids, topics and times are all one such run).
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s, run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        char esc[8];
        snprintf(esc, sizeof esc, "\\u%04x", c);
        out += esc;
      }
    }
  }
  out.append(s, run, s.size() - run);
  out += '"';
}

}  // namespace

std::string eventJsonText(const store::Event& e) {
  // Keys in nlohmann's order (its objects are sorted maps), so both forms read the same.
  std::string out;
  out.reserve(160 + e.id.size() + e.topic.size() + e.source.size() + e.payload.size());
  out += "{\"hops\":";
  out += std::to_string(e.hops);
  out += ",\"id\":";
  appendQuoted(out, e.id);
  out += ",\"payload\":";
  // A newline can only be whitespace between JSON tokens: a space instead keeps the text one line
  // (an SSE data line) and the same JSON.
  size_t at = out.size();
  out += e.payload;
  for (size_t i = at; i < out.size(); ++i)
    if (out[i] == '\n' || out[i] == '\r') out[i] = ' ';
  out += ",\"seq\":";
  out += std::to_string(e.seq);
  out += ",\"source\":";
  appendQuoted(out, e.source);
  out += ",\"time\":";
  appendQuoted(out, isoTime(e.timeMs));
  out += ",\"topic\":";
  appendQuoted(out, e.topic);
  out += ",\"trust\":";
  appendQuoted(out, e.trust);
  out += '}';
  return out;
}

EventBus::EventBus(store::Store& store, Delivery deliver, kj::Timer* timer, Limits limits)
    : store_(store), deliver_(std::move(deliver)), timer_(timer), limits_(limits), tasks_(*this) {
  if (limits_.maxBatch == 0) limits_.maxBatch = 1;
}

EventBus::~EventBus() {
  for (auto& p : queue_) p.reject(KJ_EXCEPTION(DISCONNECTED, "the broker is stopping"));
}

void EventBus::Pending::reject(kj::Exception&& e) {
  if (fulfiller && fulfiller->isWaiting()) fulfiller->reject(kj::mv(e));
  if (text && text->isWaiting()) text->reject(kj::mv(e));
}

void EventBus::taskFailed(kj::Exception&& e) { spdlog::error("events: {}", e.getDescription().cStr()); }

kj::Promise<store::Event> EventBus::publish(store::Event draft) {
  auto paf = kj::newPromiseAndFulfiller<store::Event>();
  enqueue(Pending{std::move(draft), kj::mv(paf.fulfiller), {}});
  return kj::mv(paf.promise);
}

kj::Promise<std::string> EventBus::publishText(store::Event draft) {
  auto paf = kj::newPromiseAndFulfiller<std::string>();
  enqueue(Pending{std::move(draft), {}, kj::mv(paf.fulfiller)});
  return kj::mv(paf.promise);
}

void EventBus::enqueue(Pending p) {
  if (p.event.id.empty()) p.event.id = newId("e");
  if (p.event.timeMs == 0) p.event.timeMs = nowMs();
  if (queue_.empty() && timer_) groupStart_ = timer_->now();
  queue_.push_back(std::move(p));
  ++published_;
  KJ_IF_MAYBE(a, arrival_) {  // a gathering that sleeps until a sender is back
    if ((*a)->isWaiting()) (*a)->fulfill();
  }
  if (queue_.size() >= limits_.maxBatch) {
    flush();  // the bound: never more than maxBatch waiting, whatever a flood sends
  } else if (!gathering_) {
    // Everything published before the loop next waits for I/O goes into the same transaction:
    // evalLast runs once every ready continuation (other requests read in the same wake-up) has run.
    gathering_ = true;
    tasks_.add(kj::evalLast([this]() { return gather(0, published_); }));
  }
}

EventBus::Gather EventBus::nextStep(unsigned polls, unsigned long long seen) const {
  if (!timer_ || queue_.empty()) return Gather::Commit;
  if (polls >= limits_.maxPolls || timer_->now() - groupStart_ >= limits_.maxWait) return Gather::Commit;
  // Look once more after the first look, and again while looking brings more: senders are arriving.
  if (polls == 0 || published_ > seen) return Gather::Poll;
  // The last group's senders, answered just before this group began, are coming back.
  if (queue_.size() < lastBatch_ && groupStart_ - lastCommit_ <= limits_.maxWait) return Gather::Poll;
  // Senders answered moments ago (by the last commit or the one before) are sending again.
  if (returning_ && returning_() > 0) return Gather::AwaitReturns;
  return Gather::Commit;
}

kj::Promise<void> EventBus::gather(unsigned polls, unsigned long long seen) {
  auto step = nextStep(polls, seen);
  if (step == Gather::Commit) {
    gathering_ = false;
    flush();
    return kj::READY_NOW;
  }
  auto again = [this, polls, now = published_]() {
    return kj::evalLast([this, polls, now]() { return gather(polls + 1, now); });
  };
  if (step == Gather::AwaitReturns) {
    // Only waiting for senders that were answered to send again: sleep until one publishes or the
    // group's time is up, rather than poll; polling would take the CPU they need to come back.
    auto paf = kj::newPromiseAndFulfiller<void>();
    arrival_ = kj::mv(paf.fulfiller);
    return paf.promise.exclusiveJoin(timer_->atTime(groupStart_ + limits_.maxWait)).then([this, again]() {
      arrival_ = nullptr;
      return again();
    });
  }
  // A delay of zero: the loop polls for I/O without sleeping and runs what that brought (requests
  // that publish); once it is about to wait again, this looks once more.
  return timer_->afterDelay(0 * kj::NANOSECONDS).then(kj::mv(again));
}

void EventBus::flush() {
  if (queue_.empty()) return;
  std::vector<Pending> batch;
  batch.swap(queue_);
  lastBatch_ = batch.size();
  if (timer_) lastCommit_ = timer_->now();
  std::vector<store::Event> events;
  events.reserve(batch.size());
  for (auto& p : batch) events.push_back(std::move(p.event));
  try {
    store_.appendEvents(events);
  } catch (std::exception& e) {
    // Nothing of this batch was committed: nobody is told it was.
    spdlog::error("events: could not commit {} events: {}", batch.size(), e.what());
    for (auto& p : batch) p.reject(KJ_EXCEPTION(FAILED, "the event could not be stored", e.what()));
    return;
  }
  stats_.commits++;
  stats_.events += batch.size();
  stats_.largestBatch = std::max(stats_.largestBatch, batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    // Delivered, then handed to its publisher (whose continuation runs after this turn anyway),
    // which can then take the event instead of a copy.
    EventText text(events[i]);
    try {
      deliver_(events[i], text);
    } catch (std::exception& e) {
      spdlog::error("events: delivering {} failed: {}", events[i].id, e.what());
    }
    if (batch[i].text)
      batch[i].text->fulfill(text.take());
    else
      batch[i].fulfiller->fulfill(std::move(events[i]));
  }
}

}  // namespace pine
