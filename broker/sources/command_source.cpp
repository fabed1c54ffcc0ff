#include "broker/sources/command_source.h"
#include "broker/sources/command_run.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "common/outside_text.h"
#include "common/rpc_link.h"

namespace pine::sources {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDropReportEvery = std::chrono::seconds(10);

long long wallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

long long msSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// A fingerprint of a run's result that stays the same across restarts (FNV-1a, 64 bits): the
// same output twice is one event, not two. Not a secret and not a defence, only a comparison.
std::string fingerprint(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

std::string json(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string lastBytes(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(s.size() - n); }

}  // namespace

// A mode lines run: its output goes to bytes() as it comes.
struct CommandSource::Run {
  StartedCommand cmd;
  kj::Array<kj::byte> outBuf = kj::heapArray<kj::byte>(16384);
  kj::Array<kj::byte> errBuf = kj::heapArray<kj::byte>(4096);
  std::string errTail;
};

CommandSource::CommandSource(kj::AsyncIoContext& io, config::Source source, CommandStarter start, Sink sink,
                             SourceStatus status, CommandLimits limits)
    : io_(io),
      source_(std::move(source)),
      start_(std::move(start)),
      sink_(std::move(sink)),
      status_(std::move(status)),
      limits_(limits),
      topic_("command/" + source_.name),
      tokens_(limits.lineBurst),
      refilled_(Clock::now()) {
  if (!status_.look) status_.look = [](const std::string&, const std::string&) {};
  if (!status_.events) status_.events = [](const std::string&, long long) {};
  if (!status_.error) status_.error = [](const std::string&, const std::string&) {};
  if (!status_.recall) status_.recall = [](const std::string&, const std::string&) { return std::optional<std::string>(); };
  if (!status_.remember) status_.remember = [](const std::string&, const std::string&, const std::string&) {};
  task_ = (source_.commandMode == "lines" ? linesLoop(0) : firstInterval()).eagerlyEvaluate([this](kj::Exception&& e) {
    spdlog::error("command source '{}': stopped: {}", source_.name, e.getDescription().cStr());
  });
}

CommandSource::~CommandSource() = default;

// The same command line and interval as the run remembered: its schedule goes on across a broker
// restart (a reload, a crash) instead of running at once each time. Another command line or
// interval runs at once: the owner changed it and wants to see it work.
std::string CommandSource::scheduleKey() const {
  std::string line = std::to_string(source_.intervalSec);
  for (const auto& a : source_.command) line += '\0' + a;
  return fingerprint(line);
}

kj::Promise<void> CommandSource::firstInterval() {
  long long wait = 0;
  if (auto last = status_.recall(source_.name, "lastRun")) {
    size_t bar = last->find('|');
    long long at = bar == std::string::npos ? 0 : std::atoll(last->substr(0, bar).c_str());
    long long since = wallMs() - at;
    if (bar != std::string::npos && last->substr(bar + 1) == scheduleKey() && since >= 0)
      wait = std::max<long long>(0, (long long)source_.intervalSec * 1000 - since);
  }
  if (wait == 0) return intervalLoop();
  spdlog::info("command source '{}': last run {} s ago; the next in {} s", source_.name,
               (source_.intervalSec * 1000LL - wait) / 1000, wait / 1000);
  return io_.provider->getTimer().afterDelay(wait * kj::MILLISECONDS).then([this]() { return intervalLoop(); });
}

kj::Promise<void> CommandSource::intervalLoop() {
  auto began = Clock::now();
  return runOnce(true).then([this, began](CommandExit) {
    long long wait = std::max<long long>(1000, (long long)source_.intervalSec * 1000 - msSince(began));
    return io_.provider->getTimer().afterDelay(wait * kj::MILLISECONDS).then([this]() { return intervalLoop(); });
  });
}

kj::Promise<void> CommandSource::linesLoop(long long lastWaitMs) {
  auto began = Clock::now();
  return runOnce(false).then([this, began, lastWaitMs](CommandExit e) {
    long long ran = msSince(began);
    long long wait = ran >= limits_.stableRunMs
                         ? limits_.restartMinMs
                         : std::min(limits_.restartMaxMs, std::max(limits_.restartMinMs, lastWaitMs * 2));
    if (!refused_) {
      std::string why = fmt::format("the command {} after {} ms; restarting it in {} s", describeExit(e), ran, wait / 1000.0);
      status_.error(source_.name, why);
      spdlog::warn("command source '{}': {}", source_.name, why);
      restarting_ = why;
    }
    return io_.provider->getTimer().afterDelay(wait * kj::MILLISECONDS).then([this, wait]() { return linesLoop(wait); });
  });
}

void CommandSource::startFailed(const std::string& why) {
  std::string reason = fmt::format("source '{}': the command is not run: {}", source_.name, why);
  if (refused_ != reason) spdlog::warn("{}", reason);  // once, not on every retry
  refused_ = reason;
  status_.error(source_.name, reason);
}

kj::Promise<CommandExit> CommandSource::runOnce(bool interval) {
  return start_(source_.name)
      .then([this, interval](StartedCommand cmd) -> kj::Promise<CommandExit> {
        if (refused_) spdlog::info("source '{}': the command runs again", source_.name);
        refused_.reset();
        restarting_.reset();
        if (interval) {
          // Once it has started: a start pined refused is no run to wait out.
          status_.remember(source_.name, "lastRun", std::to_string(wallMs()) + "|" + scheduleKey());
          RunBounds bounds{source_.timeoutSec, limits_.maxStdoutBytes, limits_.stderrTailBytes, limits_.drainMs};
          return runToEnd(io_.provider->getTimer(), kj::mv(cmd), bounds, [this]() {
                   spdlog::warn("command source '{}': still running after {} s: killed", source_.name, source_.timeoutSec);
                 }).then([this](FinishedCommand f) {
            intervalDone(f);
            logStderr(f.exit, f.errTail);
            return f.exit;
          });
        }
        status_.look(source_.name, "running");
        auto run = kj::heap<Run>();
        Run& r = *run;
        r.cmd = kj::mv(cmd);
        auto onErr = [&r, cap = limits_.stderrTailBytes](const char* p, size_t n) {
          r.errTail.append(p, n);
          if (r.errTail.size() > 2 * cap) r.errTail.erase(0, r.errTail.size() - cap);
        };
        auto reading = kj::joinPromises(kj::arr(readLines(r), pump(*r.cmd.err, r.errBuf, onErr)))
                           .eagerlyEvaluate(nullptr);
        auto& timer = io_.provider->getTimer();
        // Its output is read to the end, or for drainMs after the exit (what it started went with it).
        return r.cmd.process->wait()
            .then([this, &timer, reading = kj::mv(reading)](CommandExit e) mutable {
              return reading.exclusiveJoin(timer.afterDelay(limits_.drainMs * kj::MILLISECONDS)).then([e]() { return e; });
            })
            .then([this, &r](CommandExit e) {
              if (!partial_.empty() || partialCut_) line(std::move(partial_), partialCut_);
              partial_.clear();
              partialCut_ = 0;
              if (droppedUnreported_) dropReported_ = {};  // the last count is reported now
              reportDrops();
              logStderr(e, r.errTail);
              return e;
            })
            .attach(kj::mv(run));
      })
      .catch_([this](kj::Exception&& e) {
        startFailed(describeRemote(e));
        return CommandExit{};
      });
}

void CommandSource::logStderr(const CommandExit& e, const std::string& errTail) {
  if (!errTail.empty())
    spdlog::info("command source '{}': {}; the end of its stderr: {}", source_.name, describeExit(e),
                 stripTerminalControls(lastBytes(errTail, limits_.stderrTailBytes)));
}

void CommandSource::intervalDone(const FinishedCommand& r) {
  const CommandExit& e = r.exit;
  nlohmann::json j;
  if (e.signaled) j["signal"] = e.code;
  else j["exitCode"] = e.code;
  j["timedOut"] = r.timedOut;
  j["stdout"] = stripTerminalControls(r.out);
  if (r.outTotal > r.out.size()) {
    j["stdoutCut"] = true;  // the first maxStdoutBytes are kept
    j["stdoutBytes"] = r.outTotal;
  }
  std::string tail = lastBytes(r.errTail, limits_.stderrTailBytes);
  if (!tail.empty()) j["stderr"] = stripTerminalControls(tail);
  j["durationMs"] = r.durationMs;

  // The status line repeats a number or a single word, never what the command printed.
  const std::string found = r.timedOut ? "timeout" : e.signaled ? "killed" : std::to_string(e.code);
  status_.look(source_.name, found);
  if (r.timedOut)
    status_.error(source_.name, fmt::format("the command ran longer than timeoutSec ({} s) and was killed with "
                                            "everything it started",
                                            source_.timeoutSec));
  else if (e.signaled || e.code != 0)
    status_.error(source_.name, "the command " + describeExit(e));

  // An event only when the result differs from the last run's (stderr and the duration aside).
  std::string print = fingerprint(found + '\n' + std::to_string(r.outTotal) + '\n' + r.out);
  if (status_.recall(source_.name, "output") == print) return;
  status_.remember(source_.name, "output", print);
  deliver(json(j));
}

void CommandSource::bytes(const char* p, size_t n) {
  while (n > 0) {
    const char* nl = static_cast<const char*>(memchr(p, '\n', n));
    size_t len = nl ? size_t(nl - p) : n;
    size_t room = limits_.maxLineBytes > partial_.size() ? limits_.maxLineBytes - partial_.size() : 0;
    size_t keep = std::min(len, room);
    partial_.append(p, keep);
    partialCut_ += len - keep;
    unpaid_ += len - keep;
    if (!nl) return;
    line(std::move(partial_), partialCut_);
    partial_.clear();
    partialCut_ = 0;
    p = nl + 1;
    n -= len + 1;
  }
}

// Out of tokens, the next read waits until one is due: a flood then waits in its pipe (the command
// blocks on write) instead of costing the broker the parsing of every line it drops.
kj::Promise<void> CommandSource::readLines(Run& r) {
  return r.cmd.out->tryRead(r.outBuf.begin(), 1, r.outBuf.size()).then([this, &r](size_t n) -> kj::Promise<void> {
    if (n == 0) return kj::READY_NOW;
    bytes(reinterpret_cast<const char*>(r.outBuf.begin()), n);
    refill();
    // What a line's token does not pay for, the bytes cut from lines, costs a line's worth each
    // maxLineBytes: a line that never ends is paced like lines are, instead of being read as fast
    // as the command writes it.
    tokens_ -= static_cast<double>(unpaid_) / static_cast<double>(limits_.maxLineBytes);
    unpaid_ = 0;
    if (tokens_ >= 1) return readLines(r);
    auto ms = static_cast<long long>((1 - tokens_) / limits_.linesPerSec * 1000) + 1;
    return io_.provider->getTimer().afterDelay(ms * kj::MILLISECONDS).then([this, &r]() { return readLines(r); });
  });
}

void CommandSource::refill() {
  auto now = Clock::now();
  tokens_ = std::min(limits_.lineBurst,
                     tokens_ + std::chrono::duration<double>(now - refilled_).count() * limits_.linesPerSec);
  refilled_ = now;
}

void CommandSource::line(std::string text, size_t cut) {
  if (!cut && !text.empty() && text.back() == '\r') text.pop_back();
  // A blank line (nothing, or only spaces and tabs) is no event.
  if (cut == 0 && text.find_first_not_of(" \t") == std::string::npos) return;
  refill();
  if (tokens_ < 1) {
    ++dropped_;
    ++droppedUnreported_;
    reportDrops();
    return;
  }
  tokens_ -= 1;
  nlohmann::json j = {{"line", stripTerminalControls(text)}};
  if (cut) {
    j["cut"] = true;  // longer than maxLineBytes: the rest of the line was dropped
    j["bytes"] = text.size() + cut;
  }
  deliver(json(j));
}

void CommandSource::reportDrops() {
  if (!droppedUnreported_) return;
  auto now = Clock::now();
  if (dropReported_ != Clock::time_point{} && now - dropReported_ < kDropReportEvery) return;
  std::string why = fmt::format(
      "dropped {} line(s) ({} in all): more than {} a second (bursts of {}); the command prints faster than pine "
      "takes its events",
      droppedUnreported_, dropped_, limits_.linesPerSec, limits_.lineBurst);
  status_.error(source_.name, why);
  spdlog::warn("command source '{}': {}", source_.name, why);
  droppedUnreported_ = 0;
  dropReported_ = now;
}

void CommandSource::deliver(const std::string& payload) {
  Draft d;
  d.source = source_.name;
  d.topic = topic_;
  d.trust = source_.trust == config::Trust::Owner ? "owner" : "untrusted";
  d.payload = payload;
  try {
    sink_(std::move(d));
    status_.events(source_.name, 1);
  } catch (const std::exception& e) {
    spdlog::error("source '{}': the broker did not take an event: {}", source_.name, e.what());
  }
}

}  // namespace pine::sources
