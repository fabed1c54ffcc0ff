// Runs the event sources that are wanted, and only those: update() is called
// with the wanted set whenever it may have changed (a subscription added or
// removed, the configuration reloaded) and starts and stops sources to match.
// Lives on the broker's event-loop thread; every method is called from there.
#pragma once
#include <kj/async-io.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/sources/draft.h"
#include "broker/sources/inbox.h"
#include "broker/sources/mqtt_client.h"
#include "broker/sources/program_source.h"
#include "broker/sources/wanted.h"
#include "config/model.h"

namespace pine::sources {

struct Options {
  Backoff reconnect;  // waits between attempts when a broker goes away
  ProgramStarter startProgram;  // asks pined to start a source program (none: they are not started)
  ProgramReport report;         // a program's status line and errors, for the store
};

class SourceManager {
 public:
  SourceManager(kj::AsyncIoContext& io, Sink sink);
  SourceManager(kj::AsyncIoContext& io, Sink sink, Options options);
  ~SourceManager();  // stops every source
  SourceManager(const SourceManager&) = delete;
  SourceManager& operator=(const SourceManager&) = delete;

  // Starts the wanted sources that are not running, stops those no longer wanted
  // or whose configuration changed. A wanted source that cannot run (a type not
  // implemented yet, MQTT with credentials, a bad address) is logged once per
  // configuration and listed by notRunning().
  void update(const std::vector<config::Source>& wanted);

  // Names of the running sources, sorted.
  std::vector<std::string> running() const;

  // Wanted sources that are not running, with the reason (also logged).
  std::map<std::string, std::string> notRunning() const;

  // Publishes through a running source, only on a topic its `publish` list
  // matches (MQTT wildcards). Error text saying why not, or nullopt when sent.
  std::optional<std::string> publish(const std::string& source, const std::string& topic,
                                     const std::string& payload);

 private:
  struct Refused {
    config::Source source;
    std::string reason;
  };
  kj::Promise<void> pump();
  void deliver(std::vector<InboxItem> items);
  void refuse(const config::Source& s, std::string reason);
  std::optional<std::string> whyNotStartable(const config::Source& s, MqttAddress& address) const;
  std::optional<std::string> checkPublishTopic(const config::Source& s, const std::string& topic) const;

  kj::AsyncIoContext& io_;
  Sink sink_;
  Options options_;
  Inbox inbox_;
  kj::Promise<void> pump_ = nullptr;
  uint64_t nextId_ = 1;
  std::map<std::string, std::unique_ptr<MqttClient>> clients_;  // by source name
  std::map<std::string, Refused> refused_;                      // wanted but not running
  std::map<std::string, std::unique_ptr<ProgramSource>> programs_;  // source programs, by name
};

}  // namespace pine::sources
