#include "broker/event_routing.h"

#include <algorithm>

#include "broker/event_bus.h"
#include "broker/policy/routing.h"
#include "broker/policy/run_limits.h"
#include "broker/policy/setup_rules.h"
#include "broker/policy/topics.h"
#include "common/log.h"
#include "common/outside_text.h"

namespace pine {
namespace {

// A source's status line and memory, in the store (schema v6).
sources::SourceStatus sourceStatus(store::Store& store) {
  sources::SourceStatus s;
  s.look = [&store](const std::string& source, const std::string& found) { store.noteSourceLook(source, nowMs(), found); };
  // events stays unset: the router counts every event a source brings (countEvent), once.
  s.error = [&store](const std::string& source, const std::string& error) { store.noteSourceError(source, nowMs(), error); };
  s.recall = [&store](const std::string& source, const std::string& key) { return store.sourceState(source, key); };
  s.remember = [&store](const std::string& source, const std::string& key, const std::string& value) {
    store.putSourceState(source, key, value, nowMs());
  };
  return s;
}

}  // namespace

EventRouter::EventRouter(store::Store& store, const std::shared_ptr<const config::Home>& config, Feed& feed,
                         Submit submit)
    : store_(store), config_(config), feed_(feed), submit_(std::move(submit)), subscriptions_(store.subscriptions()) {
  countMissed();
}

EventRouter::~EventRouter() {
  flushCounts();  // the broker stops: what was counted since the last save is not lost
}

void EventRouter::deliver(const store::Event& e, EventText& text) {
  // Built only for someone listening, as text once (not an object each SSE stream writes out).
  if (feed_.subscribers() > 0) feed_.publish(eventFeedItem(e.topic, e.seq, text.get()));
  countEvent(e);
  auto cfg = config_;
  config::Trust trust = e.trust == "owner" ? config::Trust::Owner : config::Trust::Untrusted;
  if (policy::checkHops(e.hops, cfg->pine.limits.eventHops)) {
    audit("event.dropped", {{"eventId", e.id}, {"topic", e.topic}, {"reason", "too many hops"}});
    return;
  }
  for (auto& target : policy::routeEvent(*cfg, {e.topic, e.source, trust, e.hops})) {
    RunRequest r;
    r.agent = target.agent;
    r.trust = target.trust;
    r.origin = "route:" + (target.route.empty() ? e.topic : target.route);
    r.eventId = e.id;
    r.hops = e.hops;
    std::string body = "Event " + e.topic + " from " + e.source + ":\n" + e.payload;
    r.text = (target.prompt.empty() ? std::string() : target.prompt + "\n\n") +
             (target.trust == config::Trust::Owner ? body : fenceOutside("event " + e.topic, body));
    auto s = submit_(r);
    if (s.taskId.empty()) spdlog::info("event {} not routed to {}: {}", e.id, target.agent, s.error);
  }
  deliverToSubscriptions(e);
}

void EventRouter::addSubscription(const store::SubscriptionRow& row) {
  store_.putSubscription(row);
  subscriptions_.push_back(row);
  updateSources();  // a source nobody wanted until now starts
}

bool EventRouter::removeSubscription(const std::string& id) {
  auto it = std::find_if(subscriptions_.begin(), subscriptions_.end(), [&](auto& s) { return s.id == id; });
  if (it == subscriptions_.end()) return false;
  store_.removeSubscription(id);
  subscriptions_.erase(it);
  updateSources();  // a source nobody wants any more stops
  return true;
}

bool EventRouter::configuredSource(const std::string& name) const {
  for (auto& s : config_->pine.sources)
    if (s.name == name) return true;
  for (auto& h : config_->pine.webhooks)
    if (h.name == name) return true;
  return false;
}

void EventRouter::countEvent(const store::Event& e) {
  countedSeq_ = std::max(countedSeq_, e.seq);  // every event: the counts cover everything up to here
  if (!configuredSource(e.source)) return;
  auto& c = unsaved_[e.source];
  c.events++;
  c.lastMs = std::max(c.lastMs, e.timeMs);
}

void EventRouter::countMissed() {
  try {
    countedSeq_ = savedSeq_ = store_.sourceCountsSeq();
    long long missed = 0;
    for (auto& row : store_.sourceEventsAfter(countedSeq_)) {
      countedSeq_ = std::max(countedSeq_, row.lastSeq);
      if (!configuredSource(row.source)) continue;
      auto& c = unsaved_[row.source];
      c.events += row.events;
      c.lastMs = std::max(c.lastMs, row.lastMs);
      missed += row.events;
    }
    if (missed > 0)
      spdlog::info("sources: {} events committed after the last saved count (the broker stopped before it saved) "
                   "are counted now",
                   missed);
    flushCounts();
  } catch (std::exception& e) {
    spdlog::warn("sources: could not count the events after the last saved count: {}", e.what());
  }
}

kj::Promise<void> EventRouter::saveCounts(kj::Timer& timer) {
  return timer.afterDelay(5 * kj::SECONDS).then([this, &timer]() {
    flushCounts();
    return saveCounts(timer);
  });
}

void EventRouter::flushCounts() {
  if (unsaved_.empty() && countedSeq_ == savedSeq_) return;
  try {
    // The counts and how far they reach, together: a crash keeps both or neither.
    store_.saveSourceCounts(unsaved_, countedSeq_);
    unsaved_.clear();
    savedSeq_ = countedSeq_;
  } catch (std::exception& ex) {
    spdlog::warn("sources: could not save the sources' event counts (kept for the next try): {}", ex.what());
  }
}

SourceFacts EventRouter::sourceFacts() const {
  SourceFacts f;
  if (sources_) {
    for (auto& name : sources_->running()) f.running.insert(name);
    for (auto& name : sources_->starting()) f.starting.insert(name);
    f.notRunning = sources_->notRunning();
  }
  f.subscriptions = subscriptions_;
  for (auto& row : store_.sourceStatuses()) f.status[row.source] = row;
  for (auto& [source, c] : unsaved_) {
    auto& row = f.status[source];
    row.source = source;
    row.events += c.events;
    row.eventMs = std::max(row.eventMs, c.lastMs);
  }
  return f;
}

void EventRouter::deliverToSubscriptions(const store::Event& e) {
  if (subscriptions_.empty()) return;
  long long now = nowMs();
  auto subs = subscriptions_;  // submit() below may add to the list
  for (auto& s : subs) {
    if (s.source != e.source) continue;
    if (!s.topic.empty() && !policy::topicMatches(s.topic, e.topic)) continue;
    const config::Source* src = nullptr;
    for (auto& c : config_->pine.sources)
      if (c.name == s.source) src = &c;
    // The source may have changed since the subscription was made (it belongs to another agent
    // now, or another source took its name): what subscribing would refuse now is not delivered.
    if (auto why = policy::heldSubscriptionReason(config_->pine.sources, s.source, s.agent)) {
      if (refusedSubscriptions_.insert(s.id).second) {
        spdlog::warn("subscription {} ({} in {}) gets no events of '{}': {}", s.id, s.agent, s.session, s.source, *why);
        audit("subscription.refused", {{"subscription", s.id}, {"agent", s.agent}, {"source", s.source}, {"why", *why}});
      }
      continue;
    }
    refusedSubscriptions_.erase(s.id);  // allowed again: a later refusal is said again
    if (s.lastDeliveredMs && now - s.lastDeliveredMs < (long long)s.throttleSec * 1000) {
      audit("subscription.throttled", {{"subscription", s.id}, {"eventId", e.id}});
      continue;
    }
    store_.touchSubscription(s.id, now);
    for (auto& c : subscriptions_)
      if (c.id == s.id) c.lastDeliveredMs = now;
    // What a source reports is outside content unless the owner marked that source trust: owner.
    bool owner = src->trust == config::Trust::Owner && e.trust == "owner";
    RunRequest r;
    r.agent = s.agent;
    r.origin = "subscription:" + s.id;
    r.eventId = e.id;
    r.hops = e.hops;
    std::string body = "Event " + e.topic + " from " + e.source + ":\n" + e.payload;
    r.text = owner ? body : fenceOutside("subscribed source " + e.source, body);
    if (s.separate) {
      r.session = s.agent + "~u-" + s.id;
      r.trust = owner ? config::Trust::Owner : config::Trust::Untrusted;
      r.separate = !owner;
    } else {
      r.session = s.session;
      r.trust = config::Trust::Owner;  // the conversation keeps its tools; the event taints it
      r.taintsSession = !owner;
    }
    auto res = submit_(r);
    if (res.taskId.empty()) spdlog::info("event {} not delivered to {}: {}", e.id, s.agent, res.error);
  }
}

store::Event sourceEvent(sources::Draft d) {
  store::Event e;
  e.topic = std::move(d.topic);
  e.source = d.source;
  e.origin = "source:" + d.source;
  e.trust = std::move(d.trust);
  e.payload = std::move(d.payload);
  return e;
}

void EventRouter::startSources(kj::AsyncIoContext& io, Publish publish, sources::OpenConnector open,
                               sources::Options options) {
  options.status = sourceStatus(store_);
  options.memory = sources::storeMemory(store_);  // what folder sources reported, across restarts
  options.report = [this](const std::string& source, const std::string& found, const std::string& error) {
    try {
      if (error.empty()) store_.noteSourceLook(source, nowMs(), found);
      else store_.noteSourceError(source, nowMs(), error);
    } catch (std::exception& e) {
      spdlog::warn("sources: could not note {}'s status: {}", source, e.what());
    }
  };
  // What a source hears is an event like any other: committed, then routed and delivered.
  auto sink = [publish = std::move(publish)](sources::Draft d) {
    auto committed = std::move(d.committed);
    publish(sourceEvent(std::move(d)), std::move(committed));
  };
  sources_ = std::make_unique<sources::SourceManager>(io, std::move(sink), std::move(open), std::move(options));
  saving_ = saveCounts(io.provider->getTimer()).eagerlyEvaluate([](kj::Exception&& e) {
    spdlog::error("sources: counting events stopped: {}", e.getDescription().cStr());
  });
  updateSources();
}

void EventRouter::updateSources() {
  if (!sources_) return;
  std::set<std::string> subscribed;
  for (auto& s : subscriptions_) subscribed.insert(s.source);
  sources_->update(sources::wantedSources(*config_, subscribed));
  for (auto& [name, why] : sources_->notRunning()) spdlog::warn("source {} is wanted but not running: {}", name, why);
  forgetLeftSources();
}

void EventRouter::forgetLeftSources() {
  std::set<std::string> configured;
  for (auto& s : config_->pine.sources) configured.insert(s.name);
  for (auto& h : config_->pine.webhooks) configured.insert(h.name);
  try {
    for (auto& name : store_.rememberedSources()) {
      if (configured.count(name)) continue;
      unsaved_.erase(name);
      long long rows = store_.forgetSource(name);
      spdlog::info("source '{}': no longer configured; its memory and status line are forgotten ({} rows)", name, rows);
    }
  } catch (std::exception& e) {
    spdlog::warn("sources: could not forget the sources that left the configuration: {}", e.what());
  }
}

kj::Promise<std::optional<std::string>> EventRouter::publishToSource(const std::string& source,
                                                                     const std::string& topic,
                                                                     const std::string& payload) {
  if (!sources_) return std::optional<std::string>("sources are not running");
  return sources_->publish(source, topic, payload);
}

}  // namespace pine
