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

#include "broker/sources/command_source.h"
#include "broker/sources/draft.h"
#include "broker/sources/folder_source.h"
#include "broker/sources/ftp_poller.h"
#include "broker/sources/http_poller.h"
#include "broker/sources/mqtt_link.h"
#include "broker/sources/program_source.h"
#include "broker/sources/wanted.h"
#include "config/model.h"

namespace pine::sources {

struct Options {
  Backoff restart;  // waits before starting a source's connector again (it could not start, or ended)
  HttpServices http;  // what `http` sources poll through; unset: they do not run
  FtpServices ftp;    // what `ftp` sources list through; unset: they do not run
  CommandStarter startCommand;  // command sources: asks pined to run one (empty: they do not run)
  SourceStatus status;          // command sources: their status lines and memory in the store
  CommandLimits commandLimits;
  // What folder sources remember (without it they do not run), and mqtt sources the last message
  // on each topic that carried a retained one (without it every retained message is delivered).
  std::shared_ptr<SourceMemory> memory;
  FolderOptions folder;
  ProgramStarter startProgram;  // asks pined to start a source program (none: they are not started)
  ProgramReport report;         // a program's status line and errors, for the store
};

class SourceManager {
 public:
  // `open` starts a source's MQTT connector (pine-mqtt, which holds its login; the broker never does).
  SourceManager(kj::AsyncIoContext& io, Sink sink, OpenConnector open, Options options = {});
  ~SourceManager();  // stops every source
  SourceManager(const SourceManager&) = delete;
  SourceManager& operator=(const SourceManager&) = delete;

  // Starts the wanted sources that are not running, stops those no longer wanted
  // or whose configuration changed. A wanted source that cannot run (a type not
  // implemented yet, a bad address) is logged once per configuration and listed
  // by notRunning(); so is one whose connector could not start or whose MQTT
  // server refused its login (a wrong password), while it is tried again with backoff.
  void update(const std::vector<config::Source>& wanted);

  // Names of the running sources, sorted.
  std::vector<std::string> running() const;
  // Running ones still on their first try (an MQTT connector connecting): not yet known to work.
  std::vector<std::string> starting() const;

  // Wanted sources that are not running, with the reason (also logged).
  std::map<std::string, std::string> notRunning() const;

  // Publishes through a running source, only on a topic its `publish` list
  // matches (MQTT wildcards; its connector checks again). Error text saying why
  // not, or nullopt once its connector handed it to the MQTT server.
  kj::Promise<std::optional<std::string>> publish(const std::string& source, const std::string& topic,
                                                  const std::string& payload);

 private:
  struct Refused {
    config::Source source;
    std::string reason;
  };
  void refuse(const config::Source& s, std::string reason);
  std::optional<std::string> whyNotStartable(const config::Source& s) const;
  bool startFolder(const config::Source& s);  // folder_source.h; false when refused
  // Why a publish on topic through s is refused (pine's own topics, not on its publish list, too big).
  std::optional<std::string> checkPublish(const config::Source& s, const std::string& topic,
                                          const std::string& payload) const;

  kj::AsyncIoContext& io_;
  Sink sink_;
  OpenConnector open_;
  Options options_;
  std::map<std::string, std::unique_ptr<MqttLink>> links_;          // by source name
  std::map<std::string, Refused> refused_;                          // wanted but not running
  HttpPolls polls_;                                                 // the `http` sources
  FtpPolls ftpPolls_;                                               // the `ftp` sources
  std::map<std::string, std::unique_ptr<CommandSource>> commands_;  // by source name (command_source.h)
  std::map<std::string, std::unique_ptr<FolderSource>> folders_;    // by source name (folder_source.h)
  std::map<std::string, std::unique_ptr<ProgramSource>> programs_;  // source programs, by name
};

}  // namespace pine::sources
