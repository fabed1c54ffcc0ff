// Where a committed event goes: to the feed, to the runs the routes of pine.yaml start, and
// into the conversations (or runs of their own) that subscribed to its source, throttled;
// what a source reports is outside content unless the owner marked it trust: owner. Also
// keeps running the sources someone wants (a subscription, a route, start: always) and
// publishes through a source's own channel. Touches the store's subscriptions, the task
// queue (submit) and the sources.
#pragma once
#include <kj/async-io.h>

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/feed.h"
#include "broker/run_services.h"
#include "broker/sources/source_manager.h"
#include "broker/sources_report.h"

namespace pine {

class EventText;  // broker/event_bus.h

// The event for what a source heard: outside content unless the source is trust: owner.
store::Event sourceEvent(sources::Draft d);

class EventRouter {
 public:
  using Submit = std::function<Submitted(RunRequest)>;
  EventRouter(store::Store& store, const std::shared_ptr<const config::Home>& config, Feed& feed, Submit submit);
  ~EventRouter();

  // Called once per committed event, in commit order (EventBus's delivery).
  void deliver(const store::Event& e, EventText& text);
  // Subscriptions are read on every event: kept in memory, written through to the store.
  void addSubscription(const store::SubscriptionRow& row);
  // Removes one (the source stops when nobody else wants it). False when there is none.
  bool removeSubscription(const std::string& id);
  const std::vector<store::SubscriptionRow>& subscriptions() const { return subscriptions_; }
  // What pinectl sources shows: running or why not, subscriptions, status lines with the
  // events counted so far (channels: the owner channels' states, filled in by the caller).
  SourceFacts sourceFacts() const;
  // Starts the source manager; what a source hears is published through `publish`, which calls
  // `committed` (when set) once the event is committed.
  // `open` starts a source's MQTT connector (pined's openMqtt); `options` says how http sources
  // poll (broker/source_polls.h), how command sources start (broker/command_start.h) and source
  // programs (broker/program_start.h).
  using Publish = std::function<void(store::Event, std::function<void()> committed)>;
  void startSources(kj::AsyncIoContext& io, Publish publish, sources::OpenConnector open, sources::Options options = {});
  // Starts the sources someone wants and stops the rest.
  void updateSources();
  kj::Promise<std::optional<std::string>> publishToSource(const std::string& source, const std::string& topic,
                                                          const std::string& payload);

 private:
  void deliverToSubscriptions(const store::Event& e);
  // Drops the memory and status line of each source that left the configuration: a source of that
  // name added later starts afresh (an ftp folder's files are new to it again).
  void forgetLeftSources();
  bool configuredSource(const std::string& name) const;
  void countEvent(const store::Event& e);
  // What a broker that stopped without saving its counts (killed) left uncounted: the events
  // after the seq the last save covered, counted now.
  void countMissed();
  kj::Promise<void> saveCounts(kj::Timer& timer);
  void flushCounts();
  store::Store& store_;
  const std::shared_ptr<const config::Home>& config_;
  Feed& feed_;
  Submit submit_;
  std::vector<store::SubscriptionRow> subscriptions_;
  std::set<std::string> refusedSubscriptions_;  // said once each: their source no longer allows them
  std::unique_ptr<sources::SourceManager> sources_;
  // Events per configured source not yet added to the store's status lines: written every few
  // seconds, not in the event's own transaction, so counting costs the intake nothing; with the
  // seq of the last event counted, which a crash leaves behind (countMissed).
  std::map<std::string, store::Store::SourceCount> unsaved_;
  long long countedSeq_ = 0, savedSeq_ = 0;
  kj::Promise<void> saving_ = nullptr;
};

}  // namespace pine
