// One `type: command` source, on the broker's event loop. The broker owns the clock: in
// mode interval it asks pined for a run every intervalSec and kills one that outlives
// timeoutSec (pined kills it too, a little later); in mode lines it keeps one process running,
// restarted with backoff when it exits. pined decides what runs and in which sandbox (the
// broker names the source, nothing else): CommandStarter is that request. What the command
// prints is outside content unless the source is trust: owner, and it is bounded: a line is
// cut at maxLineBytes (and says so), an interval run's stdout at maxStdoutBytes, and lines
// beyond linesPerSec (a bucket of lineBurst) are dropped, counted and reported, so a flood
// costs neither memory nor the other sources' turn: past the bucket, the broker reads no more
// until a line is due, and the command waits on its full pipe.
#pragma once
#include <kj/async-io.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "broker/sources/draft.h"
#include "config/model.h"

namespace pine::sources {

struct CommandExit {
  bool signaled = false;
  int code = 0;  // the exit code, or the signal's number
};

// A started command as the broker holds it. Dropping the handle kills the command and all it started.
class CommandHandle {
 public:
  virtual ~CommandHandle() noexcept(false) = default;
  virtual kj::Promise<CommandExit> wait() = 0;
  virtual void kill() = 0;
};

struct StartedCommand {
  kj::Own<kj::AsyncInputStream> out;
  kj::Own<kj::AsyncInputStream> err;
  kj::Own<CommandHandle> process;
  std::string sandbox;
};

// Asks pined to start the command of the source named; fails saying why (no sandbox, ...).
using CommandStarter = std::function<kj::Promise<StartedCommand>(const std::string& source)>;

// What a source tells the store about itself: its status line and what it remembers between looks.
struct SourceStatus {
  std::function<void(const std::string& source, const std::string& found)> look;
  std::function<void(const std::string& source, long long count)> events;
  std::function<void(const std::string& source, const std::string& error)> error;
  std::function<std::optional<std::string>(const std::string& source, const std::string& key)> recall;
  std::function<void(const std::string& source, const std::string& key, const std::string& value)> remember;
};

struct CommandLimits {
  size_t maxLineBytes = 4096;         // a longer line is cut here and marked
  size_t maxStdoutBytes = 64 * 1024;  // of one interval run; the rest is counted, not kept
  size_t stderrTailBytes = 2048;      // the end of stderr, kept for the event and the log
  double linesPerSec = 10;            // mode lines: events a second on average...
  double lineBurst = 100;             // ...and at once; beyond that lines are dropped and counted
  long long restartMinMs = 1000;      // mode lines: the wait before a restart doubles from here...
  long long restartMaxMs = 300000;    // ...up to this
  long long stableRunMs = 60000;      // a run this long resets the wait
  long long drainMs = 2000;           // after the exit, how long its pipes may still be read
};

struct FinishedCommand;  // command_run.h

class CommandSource {
 public:
  CommandSource(kj::AsyncIoContext& io, config::Source source, CommandStarter start, Sink sink, SourceStatus status,
                CommandLimits limits = {});
  CommandSource(const CommandSource&) = delete;
  CommandSource& operator=(const CommandSource&) = delete;
  ~CommandSource();  // the running command (if any) is killed

  const config::Source& source() const { return source_; }
  // Why the last start failed (pined refused: no sandbox, sandbox: false, ...), or nullopt.
  // Why it is not running now: pined refused the start, or a lines command ended and waits to be
  // started again.
  std::optional<std::string> notRunning() const { return refused_ ? refused_ : restarting_; }
  uint64_t droppedLines() const { return dropped_; }

 private:
  struct Run;
  kj::Promise<void> firstInterval();  // waits out what is left of the interval of the last run remembered
  kj::Promise<void> intervalLoop();
  std::string scheduleKey() const;
  kj::Promise<void> linesLoop(long long waitMs);
  kj::Promise<CommandExit> runOnce(bool interval);
  void intervalDone(const FinishedCommand& run);
  void logStderr(const CommandExit& e, const std::string& errTail);
  kj::Promise<void> readLines(Run& r);
  void refill();
  void bytes(const char* p, size_t n);
  void line(std::string text, size_t cut);
  void reportDrops();
  void startFailed(const std::string& why);
  void deliver(const std::string& payload);

  kj::AsyncIoContext& io_;
  config::Source source_;
  CommandStarter start_;
  Sink sink_;
  SourceStatus status_;
  CommandLimits limits_;
  std::string topic_;
  std::optional<std::string> refused_;
  std::optional<std::string> restarting_;  // a lines command that ended: why, until it runs again
  // mode lines: the line being read, what was cut of it, the bucket and what it dropped
  std::string partial_;
  size_t partialCut_ = 0;
  size_t unpaid_ = 0;     // bytes cut from lines since the last read: they cost tokens too
  double tokens_ = 0;
  std::chrono::steady_clock::time_point refilled_;
  uint64_t dropped_ = 0, droppedUnreported_ = 0;
  std::chrono::steady_clock::time_point dropReported_{};
  kj::Promise<void> task_ = nullptr;  // last: cancelled (and the command killed) before the rest goes
};

}  // namespace pine::sources
