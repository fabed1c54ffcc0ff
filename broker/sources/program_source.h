// One running source program (docs/sources.md "source programs"): pined starts the owner's
// program and hands the broker one end of its stdin and stdout; this class speaks the JSON-lines
// protocol on it, on the event loop. The first line it writes names the source and its options;
// every line the program prints is an event ({"topic"?, "payload"}) or its status line
// ({"status": {"found": X}}); publish requests go to the program as {"publish": {...}} lines.
// Lines are bounded (longer ones dropped and counted), the pace is bounded (a flood waits in the
// program's own pipe, not in the broker's memory), garbage is counted and skipped. When the
// program ends it is started again with backoff, and notRunning() says why it is not up.
#pragma once
#include <kj/async-io.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "broker/sources/draft.h"
#include "config/model.h"

namespace pine::sources {

// What pined gave for one start of a program: the stream, and a way to learn how it ended.
// Dropping it kills the program (pined's handle goes with it).
struct ProgramLink {
  kj::Own<kj::AsyncIoStream> stream;
  std::function<kj::Promise<std::string>()> exited;  // "exited with 3", once pined reaped it
};
using ProgramStarter = std::function<kj::Promise<ProgramLink>(const std::string& source)>;
// A source's status line (found) and its errors, as the store keeps them.
using ProgramReport = std::function<void(const std::string& source, const std::string& found, const std::string& error)>;

struct ProgramLimits {
  size_t maxLineBytes = 1 << 20;    // a longer line is dropped and counted
  unsigned eventsPerSecond = 1000;  // lines of any kind; beyond this the program waits (its writes block)
  size_t bytesPerSecond = 8 << 20;  // read, whatever the lines: a line that never ends is paced too
  size_t maxQueuedWrites = 256;     // publish requests the program has not read yet
  unsigned minRestartSec = 1, maxRestartSec = 60;
};

// Whether a change from a to b leaves a running program as it is.
bool sameProgram(const config::Source& a, const config::Source& b);

// An event line without "topic" gets the source's name as its topic.
// Why `topic` cannot be a program's event topic, or nullopt.
std::optional<std::string> checkProgramTopic(const std::string& topic);

class ProgramSource {
 public:
  ProgramSource(kj::Timer& timer, config::Source source, ProgramStarter start, Sink sink, ProgramReport report,
                ProgramLimits limits = {});
  ~ProgramSource();
  ProgramSource(const ProgramSource&) = delete;
  ProgramSource& operator=(const ProgramSource&) = delete;

  const config::Source& source() const { return source_; }
  // Why it is not running now (starting, or waiting to restart after it ended), or nullopt.
  std::optional<std::string> whyNotRunning() const;
  // The topic was checked against the publish list. Error text or nullopt when queued.
  std::optional<std::string> publish(const std::string& topic, const std::string& payload);
  // Lines dropped so far (not JSON, not an object, a bad topic, too long).
  uint64_t dropped() const { return dropped_; }

 private:
  kj::Promise<void> run();
  kj::Promise<void> readLines(ProgramLink& link);
  kj::Promise<void> pace();
  void line(std::string_view text);
  void drop(const std::string& why);
  void reportDrops(long long now);
  void write(std::string line);

  kj::Timer& timer_;
  config::Source source_;
  ProgramStarter start_;
  Sink sink_;
  ProgramReport report_;
  ProgramLimits limits_;
  kj::Maybe<ProgramLink> link_;  // while the program runs
  std::string why_ = "starting";   // while it does not
  unsigned restartSec_;
  kj::Array<char> buf_;
  kj::TimePoint startedAt_ = kj::origin<kj::TimePoint>();
  std::string pending_;  // an unfinished line
  bool skipping_ = false;  // inside a line that was too long: dropped up to its newline
  uint64_t dropped_ = 0;
  unsigned linesThisSecond_ = 0;  // every line read, against limits_.eventsPerSecond
  size_t bytesThisSecond_ = 0;    // every byte read, against limits_.bytesPerSecond
  kj::TimePoint secondStart_ = kj::origin<kj::TimePoint>();
  long long lastErrorReportMs_ = 0;
  uint64_t reportedDropped_ = 0;  // dropped_ at the last report
  std::string lastDropWhy_;
  bool lateReport_ = false;  // a report of what came after the last one is due
  kj::Promise<void> lateReportTask_ = kj::READY_NOW;
  kj::Promise<void> writes_ = kj::READY_NOW;
  size_t queuedWrites_ = 0;
  kj::Promise<void> running_ = nullptr;
};

}  // namespace pine::sources
