// A command pined started for the broker (a command source's interval run, a bundled command's
// call), read to its end within bounds: the head of its stdout, the tail of its stderr, killed
// with everything it started once past its time limit, and its pipes drained for a moment after
// it exits (what it started and left behind cannot hold the broker).
#pragma once
#include <kj/async-io.h>
#include <kj/timer.h>

#include <functional>
#include <string>

#include "broker/sources/command_source.h"

namespace pine::sources {

struct RunBounds {
  int timeoutSec = 60;
  size_t maxStdoutBytes = 64 * 1024;  // the rest is counted, not kept
  size_t stderrTailBytes = 2048;
  long long drainMs = 2000;
};

struct FinishedCommand {
  CommandExit exit;
  bool timedOut = false;
  std::string out;  // at most maxStdoutBytes
  size_t outTotal = 0;
  std::string errTail;  // at most stderrTailBytes
  long long durationMs = 0;
};

// Reads a stream to its end, handing every piece to `f`; a pipe that fails is a pipe at its end.
kj::Promise<void> pump(kj::AsyncInputStream& in, kj::ArrayPtr<kj::byte> buf, std::function<void(const char*, size_t)> f);

// `onTimeout` is told before the kill (for the log).
kj::Promise<FinishedCommand> runToEnd(kj::Timer& timer, StartedCommand cmd, RunBounds bounds,
                                      std::function<void()> onTimeout = {});

// "exited with 3", "killed by signal 9 (Killed)".
std::string describeExit(const CommandExit& e);

}  // namespace pine::sources
