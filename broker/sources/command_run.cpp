#include "broker/sources/command_run.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>

namespace pine::sources {
namespace {

struct Running {
  StartedCommand cmd;
  kj::Array<kj::byte> outBuf = kj::heapArray<kj::byte>(16384);
  kj::Array<kj::byte> errBuf = kj::heapArray<kj::byte>(4096);
  FinishedCommand result;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

}  // namespace

namespace {
// A read, then the next: a chain KJ keeps flat however long the output is. Nothing may wrap each
// step (a catch_ a read made the stack one level deeper each 16 KiB, and 20 MB of output
// overflowed the broker's stack).
kj::Promise<void> pumpEach(kj::AsyncInputStream& in, kj::ArrayPtr<kj::byte> buf,
                           std::function<void(const char*, size_t)> f) {
  return in.tryRead(buf.begin(), 1, buf.size())
      .then([&in, buf, f = std::move(f)](size_t n) mutable -> kj::Promise<void> {
        if (n == 0) return kj::READY_NOW;
        f(reinterpret_cast<const char*>(buf.begin()), n);
        return pumpEach(in, buf, std::move(f));
      });
}
}  // namespace

kj::Promise<void> pump(kj::AsyncInputStream& in, kj::ArrayPtr<kj::byte> buf, std::function<void(const char*, size_t)> f) {
  return pumpEach(in, buf, std::move(f)).catch_([](kj::Exception&&) {});
}

std::string describeExit(const CommandExit& e) {
  return e.signaled ? fmt::format("killed by signal {} ({})", e.code, strsignal(e.code))
                    : fmt::format("exited with {}", e.code);
}

kj::Promise<FinishedCommand> runToEnd(kj::Timer& timer, StartedCommand cmd, RunBounds bounds,
                                      std::function<void()> onTimeout) {
  auto run = kj::heap<Running>();
  Running& r = *run;
  r.cmd = kj::mv(cmd);
  auto onOut = [&r, cap = bounds.maxStdoutBytes](const char* p, size_t n) {
    r.result.outTotal += n;
    r.result.out.append(p, std::min(n, cap - r.result.out.size()));
  };
  auto onErr = [&r, cap = bounds.stderrTailBytes](const char* p, size_t n) {
    r.result.errTail.append(p, n);
    if (r.result.errTail.size() > 2 * cap) r.result.errTail.erase(0, r.result.errTail.size() - cap);
  };
  auto reading = kj::joinPromises(kj::arr(pump(*r.cmd.out, r.outBuf, onOut), pump(*r.cmd.err, r.errBuf, onErr)))
                     .eagerlyEvaluate(nullptr);
  kj::Promise<CommandExit> exited = r.cmd.process->wait().exclusiveJoin(
      timer.afterDelay(bounds.timeoutSec * kj::SECONDS).then([&r, onTimeout = std::move(onTimeout)]() {
        r.result.timedOut = true;
        if (onTimeout) onTimeout();
        r.cmd.process->kill();
        return r.cmd.process->wait();
      }));
  // Its output is read to the end, or for drainMs after the exit (what it started went with it).
  return exited
      .then([&timer, drain = bounds.drainMs, reading = kj::mv(reading)](CommandExit e) mutable {
        return reading.exclusiveJoin(timer.afterDelay(drain * kj::MILLISECONDS)).then([e]() { return e; });
      })
      .then([&r, tail = bounds.stderrTailBytes](CommandExit e) {
        r.result.exit = e;
        if (r.result.errTail.size() > tail) r.result.errTail.erase(0, r.result.errTail.size() - tail);
        r.result.durationMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::steady_clock::now() - r.started).count();
        return kj::mv(r.result);
      })
      .attach(kj::mv(run));
}

}  // namespace pine::sources
