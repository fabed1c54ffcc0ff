#include "broker/feed.h"

#include <kj/debug.h>

#include <algorithm>
#include <string_view>

namespace pine {

Feed::~Feed() {
  for (auto* s : subs_) s->feed_ = nullptr;
}

kj::Own<Feed::Subscription> Feed::subscribe(Filter filter, size_t maxQueued, size_t maxBytes) {
  auto sub = kj::Own<Subscription>(new Subscription(*this, kj::mv(filter), maxQueued, maxBytes),
                                   kj::_::HeapDisposer<Subscription>::instance);
  subs_.push_back(sub.get());
  return sub;
}

void Feed::publish(nlohmann::json item) {
  // A subscriber that overflows leaves the list (only itself) while we walk it: step on first. The
  // last one that wants the item takes it; the others get a copy.
  for (auto it = subs_.begin(); it != subs_.end();) {
    auto* s = *it++;
    if (s->overflowed_ || (s->filter_ && !s->filter_(item))) continue;
    s->push(it == subs_.end() ? std::move(item) : nlohmann::json(item));
  }
}

Feed::Subscription::Subscription(Feed& feed, Filter filter, size_t maxQueued, size_t maxBytes)
    : feed_(&feed), filter_(kj::mv(filter)), maxQueued_(maxQueued), maxBytes_(maxBytes) {}

size_t Feed::Subscription::weight(const nlohmann::json& item) {
  // An event item's weight is its text; anything else (progress, approvals) is small.
  if (item.is_object())
    if (auto it = item.find("text"); it != item.end() && it->is_string()) return it->get_ref<const std::string&>().size() + 64;
  return 256;
}

Feed::Subscription::~Subscription() {
  if (feed_) feed_->subs_.remove(this);
}

void Feed::Subscription::push(nlohmann::json item) {
  if (waiter_ && waiter_->isWaiting()) {
    waiter_->fulfill(std::move(item));
    waiter_ = nullptr;
    return;
  }
  const size_t w = weight(item);
  if (queue_.size() >= maxQueued_ || queuedBytes_ + w > maxBytes_) {
    // A listener that does not keep up is dropped, not waited for.
    overflowed_ = true;
    queue_.clear();
    queuedBytes_ = 0;
    queue_.push_back({{"kind", "overflow"}});
    if (feed_) feed_->subs_.remove(this);
    feed_ = nullptr;
    wakeReady();
    return;
  }
  queue_.push_back(std::move(item));
  queuedBytes_ += w;
  wakeReady();
}

void Feed::Subscription::wakeReady() {
  if (readyWaiter_ && readyWaiter_->isWaiting()) readyWaiter_->fulfill();
  readyWaiter_ = nullptr;
}

kj::Promise<void> Feed::Subscription::ready() {
  if (!queue_.empty()) return kj::READY_NOW;
  if (overflowed_) return KJ_EXCEPTION(DISCONNECTED, "this feed subscription overflowed and is closed");
  auto paf = kj::newPromiseAndFulfiller<void>();
  readyWaiter_ = kj::mv(paf.fulfiller);
  return kj::mv(paf.promise);
}

kj::Promise<nlohmann::json> Feed::Subscription::next() {
  if (!queue_.empty()) {
    auto item = kj::mv(queue_.front());
    queue_.pop_front();
    queuedBytes_ -= std::min(queuedBytes_, weight(item));
    return kj::mv(item);
  }
  if (overflowed_) return KJ_EXCEPTION(DISCONNECTED, "this feed subscription overflowed and is closed");
  auto paf = kj::newPromiseAndFulfiller<nlohmann::json>();
  waiter_ = kj::mv(paf.fulfiller);
  return kj::mv(paf.promise);
}

std::optional<nlohmann::json> Feed::Subscription::tryNext() {
  if (queue_.empty()) return std::nullopt;
  auto item = kj::mv(queue_.front());
  queue_.pop_front();
  queuedBytes_ -= std::min(queuedBytes_, weight(item));
  return item;
}

bool topicMatches(const std::string& filter, const std::string& topic) {
  // Level by level over views of both strings: every event an SSE stream filters comes here.
  std::string_view f(filter), t(topic);
  size_t fi = 0, ti = 0;
  for (;;) {
    size_t fe = f.find('/', fi), te = t.find('/', ti);
    std::string_view fl = f.substr(fi, fe == std::string_view::npos ? std::string_view::npos : fe - fi);
    if (fl == "#") return fe == std::string_view::npos;  // '#' only as the last level
    if (ti > t.size()) return false;                     // the topic ran out of levels first
    std::string_view tl = t.substr(ti, te == std::string_view::npos ? std::string_view::npos : te - ti);
    if (fl != "+" && fl != tl) return false;
    if (fe == std::string_view::npos) return te == std::string_view::npos;
    fi = fe + 1;
    ti = te == std::string_view::npos ? t.size() + 1 : te + 1;
  }
}

std::optional<std::string> filterProblem(const std::string& filter) {
  size_t from = 0;
  for (;;) {
    size_t end = filter.find('/', from);
    std::string_view level = std::string_view(filter).substr(from, end == std::string::npos ? std::string::npos : end - from);
    if (level.find('#') != std::string_view::npos && (level != "#" || end != std::string::npos))
      return "'#' stands alone as the last level of a filter (home/#)";
    if (level.find('+') != std::string_view::npos && level != "+") return "'+' stands alone for one level (home/+/temp)";
    if (end == std::string::npos) return std::nullopt;
    from = end + 1;
  }
}

nlohmann::json eventFeedItem(const std::string& topic, long long seq, std::string text) {
  // Member by member: one is built for every committed event someone listens to, and an
  // initializer list builds each pair as an array first.
  nlohmann::json item(nlohmann::json::value_t::object);
  auto& fields = item.get_ref<nlohmann::json::object_t&>();
  fields.emplace("kind", "event");
  fields.emplace("seq", seq);
  fields.emplace("text", std::move(text));
  fields.emplace("topic", topic);
  return item;
}

}  // namespace pine
