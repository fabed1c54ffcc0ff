#include "supervisor/stderr_log.h"

#include <spdlog/spdlog.h>

#include "common/log.h"

namespace pine {
namespace {

struct StderrLog {
  std::string label, pending;
  long long minuteStart = 0;
  int logged = 0;
  long long skipped = 0;

  void line() {
    long long now = nowMs();
    if (now - minuteStart >= 60000) {
      flushSkipped();
      minuteStart = now;
      logged = 0;
    }
    if (logged < kStderrLinesPerMinute) {
      ++logged;
      spdlog::info("{}: {}", label, pending);
    } else {
      ++skipped;
    }
    pending.clear();
  }
  void flushSkipped() {
    if (skipped > 0)
      spdlog::warn("{}: {} more line(s) on stderr were not logged (at most {} a minute)", label, skipped,
                   kStderrLinesPerMinute);
    skipped = 0;
  }
};

kj::Promise<void> logLines(kj::Own<kj::AsyncInputStream> in, kj::Own<StderrLog> log) {
  auto buf = kj::heapArray<char>(4096);
  auto read = in->tryRead(buf.begin(), 1, buf.size());
  return read.then([in = kj::mv(in), buf = kj::mv(buf), log = kj::mv(log)](size_t n) mutable -> kj::Promise<void> {
    if (n == 0) {
      if (!log->pending.empty()) log->line();
      log->flushSkipped();
      return kj::READY_NOW;
    }
    for (size_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') log->line();
      else if (log->pending.size() < kStderrLineBytes) log->pending += buf[i];
    }
    return logLines(kj::mv(in), kj::mv(log));
  });
}

}  // namespace

kj::Promise<void> logStderrLines(kj::Own<kj::AsyncInputStream> in, std::string label) {
  auto log = kj::heap<StderrLog>();
  log->label = std::move(label);
  return logLines(kj::mv(in), kj::mv(log));
}

}  // namespace pine
