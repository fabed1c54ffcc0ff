#include "broker/sources/program_source.h"
#include "broker/sources/program_line.h"

#include <fmt/format.h>
#include <kj/debug.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <tuple>

#include "broker/policy/topics.h"
#include "common/log.h"

namespace pine::sources {

bool sameProgram(const config::Source& a, const config::Source& b) {
  return std::tie(a.type, a.use, a.options, a.publish, a.trust) == std::tie(b.type, b.use, b.options, b.publish, b.trust);
}

std::optional<std::string> checkProgramTopic(const std::string& topic) {
  if (auto why = policy::validateTopic(topic)) return why;
  if (policy::isReservedTopic(topic))
    return "'" + topic + "' is one of pine's own topics (agent/, approval/, pine/, state/, timer/)";
  return std::nullopt;
}

ProgramSource::ProgramSource(kj::Timer& timer, config::Source source, ProgramStarter start, Sink sink,
                             ProgramReport report, ProgramLimits limits)
    : timer_(timer),
      source_(std::move(source)),
      start_(std::move(start)),
      sink_(std::move(sink)),
      report_(std::move(report)),
      limits_(limits),
      restartSec_(limits.minRestartSec) {
  buf_ = kj::heapArray<char>(65536);
  secondStart_ = timer.now();
  running_ = run().eagerlyEvaluate([name = source_.name](kj::Exception&& e) {
    spdlog::error("source '{}': its program is no longer looked after: {}", name, e.getDescription().cStr());
  });
}

ProgramSource::~ProgramSource() {
  // Reads and writes go before the stream they use; dropping the link kills the program.
  running_ = nullptr;
  writes_ = nullptr;
  link_ = nullptr;
}

std::optional<std::string> ProgramSource::whyNotRunning() const {
  if (link_ != nullptr) return std::nullopt;
  return why_;
}

kj::Promise<void> ProgramSource::run() {
  return start_(source_.name)
      .then(
          [this](ProgramLink link) -> kj::Promise<std::string> {
            link_ = kj::mv(link);
            why_.clear();
            pending_.clear();
            skipping_ = false;
            startedAt_ = timer_.now();
            spdlog::info("source '{}': its program runs", source_.name);
            nlohmann::json options = nlohmann::json::object();
            for (const auto& [k, v] : source_.options) options[k] = v;
            write(nlohmann::json{{"source", source_.name}, {"options", options}}.dump() + "\n");
            auto& l = KJ_ASSERT_NONNULL(link_);
            return readLines(l)
                .catch_([](kj::Exception&&) {})  // a broken stream ends the run like an end of output
                .then([this, &l]() {
                  // Output closed: how it ended, once pined reaped it (or it still runs with its output closed).
                  return l.exited()
                      .catch_([](kj::Exception&&) { return std::string("ended"); })
                      .exclusiveJoin(timer_.afterDelay(2 * kj::SECONDS).then([]() {
                        return std::string("closed its output");
                      }));
                });
          },
          [this](kj::Exception&& e) -> kj::Promise<std::string> {
            startedAt_ = timer_.now();
            return std::string("could not be started: ") + e.getDescription().cStr();
          })
      .then([this](std::string how) {
        writes_ = kj::READY_NOW;
        queuedWrites_ = 0;
        link_ = nullptr;  // kills what is left of it
        unsigned wait = restartSec_;
        // A program that ran a while starts again soon; one that keeps failing, ever later.
        if (timer_.now() - startedAt_ >= 60 * kj::SECONDS) wait = restartSec_ = limits_.minRestartSec;
        restartSec_ = std::min(restartSec_ * 2, limits_.maxRestartSec);
        why_ = fmt::format("source '{}': its program {}; starting it again in {} s", source_.name, how, wait);
        spdlog::warn("{}", why_);
        if (report_) report_(source_.name, "", why_);
        audit("source.program_ended", {{"source", source_.name}, {"how", how}, {"restart_in_s", wait}});
        return timer_.afterDelay(wait * kj::SECONDS).then([this]() { return run(); });
      });
}

kj::Promise<void> ProgramSource::readLines(ProgramLink& link) {
  // A line is a byte at least: one read holds no more lines than this second has left (a 64 KiB
  // read of short lines was thousands of events at once, past the pace).
  const size_t left = limits_.eventsPerSecond > linesThisSecond_ ? limits_.eventsPerSecond - linesThisSecond_ : 1;
  return link.stream->tryRead(buf_.begin(), 1, std::min(buf_.size(), left)).then([this, &link](size_t n) -> kj::Promise<void> {
    if (n == 0) return kj::READY_NOW;
    bytesThisSecond_ += n;
    std::string_view chunk(buf_.begin(), n);
    while (!chunk.empty()) {
      size_t nl = chunk.find('\n');
      std::string_view piece = chunk.substr(0, nl);
      chunk = nl == std::string_view::npos ? std::string_view() : chunk.substr(nl + 1);
      if (!skipping_) {
        pending_.append(piece);
        if (pending_.size() > limits_.maxLineBytes) {
          ++linesThisSecond_;
          drop(fmt::format("a line longer than {} bytes", limits_.maxLineBytes));
          pending_.clear();
          skipping_ = true;
        }
      }
      if (nl == std::string_view::npos) break;
      if (!skipping_) line(pending_);
      pending_.clear();
      skipping_ = false;
    }
    return pace().then([this, &link]() { return readLines(link); });
  });
}

kj::Promise<void> ProgramSource::pace() {
  auto now = timer_.now();
  if (now - secondStart_ >= 1 * kj::SECONDS) {
    secondStart_ = now;
    linesThisSecond_ = 0;
    bytesThisSecond_ = 0;
  }
  if (linesThisSecond_ < limits_.eventsPerSecond && bytesThisSecond_ < limits_.bytesPerSecond) return kj::READY_NOW;
  // Over the pace: stop reading for as long as those lines (or bytes: a line that never ends is
  // no line at all) were worth. The program's writes block in the meantime; nothing piles up
  // here, and other sources keep their turn.
  auto seconds = [](uint64_t n, uint64_t perSecond) { return (n + perSecond - 1) / perSecond; };  // 1,999 lines: 2 s
  auto wait = std::max(seconds(linesThisSecond_, limits_.eventsPerSecond), seconds(bytesThisSecond_, limits_.bytesPerSecond)) *
              kj::SECONDS;
  linesThisSecond_ = 0;
  bytesThisSecond_ = 0;
  return timer_.atTime(secondStart_ + wait).then([this]() { secondStart_ = timer_.now(); });
}

void ProgramSource::line(std::string_view text) {
  // Every line counts against the pace, not only events: a flood of status lines (a write to
  // the store each) or of lines to skip would otherwise hold the broker's loop.
  ++linesThisSecond_;
  ProgramLine l = readProgramLine(text, source_.name);
  if (l.kind == ProgramLine::Blank) return;
  if (l.kind == ProgramLine::Skipped) return drop(l.why);
  if (l.kind == ProgramLine::Status) {
    if (report_) report_(source_.name, l.found, "");
    return;
  }
  Draft d{source_.name, l.topic, source_.trust == config::Trust::Owner ? "owner" : "untrusted", std::move(l.payload), {}};
  try {
    sink_(std::move(d));
  } catch (std::exception& e) {
    spdlog::error("source '{}': the broker did not take an event: {}", source_.name, e.what());
  } catch (kj::Exception& e) {
    spdlog::error("source '{}': the broker did not take an event: {}", source_.name, e.getDescription().cStr());
  }
}

void ProgramSource::drop(const std::string& why) {
  ++dropped_;
  lastDropWhy_ = why;
  long long now = nowMs();
  if (now - lastErrorReportMs_ >= 1000) return reportDrops(now);
  // A stream of garbage is one line a second in the log; what came after the last report is
  // reported once that second is over, so the count and the last reason are never lost.
  if (lateReport_) return;
  lateReport_ = true;
  lateReportTask_ = timer_.afterDelay((lastErrorReportMs_ + 1000 - now) * kj::MILLISECONDS)
                        .then([this]() {
                          lateReport_ = false;
                          if (dropped_ > reportedDropped_) reportDrops(nowMs());
                        })
                        .eagerlyEvaluate(nullptr);
}

void ProgramSource::reportDrops(long long now) {
  lastErrorReportMs_ = now;
  reportedDropped_ = dropped_;
  std::string text =
      fmt::format("its program printed {} line(s) that were skipped; the last: {}", dropped_, lastDropWhy_);
  spdlog::warn("source '{}': {}", source_.name, text);
  if (report_) report_(source_.name, "", text);
}

void ProgramSource::write(std::string line) {
  ++queuedWrites_;
  auto text = kj::heap<std::string>(std::move(line));
  writes_ = writes_
                .then([this, text = kj::mv(text)]() mutable -> kj::Promise<void> {
                  KJ_IF_MAYBE(l, link_) {
                    auto& t = *text;
                    return l->stream->write(t.data(), t.size()).attach(kj::mv(text));
                  }
                  return kj::READY_NOW;
                })
                .then([this]() { --queuedWrites_; }, [this](kj::Exception&&) { --queuedWrites_; })
                .eagerlyEvaluate(nullptr);
}

std::optional<std::string> ProgramSource::publish(const std::string& topic, const std::string& payload) {
  if (link_ == nullptr) return "cannot publish through " + why_;
  if (queuedWrites_ >= limits_.maxQueuedWrites)
    return fmt::format("source '{}': its program has not read the last {} publish requests; try again later",
                       source_.name, queuedWrites_);
  auto value = nlohmann::json::parse(payload, nullptr, false);
  if (value.is_discarded()) value = payload;  // not JSON: handed on as a string
  write(nlohmann::json{{"publish", {{"topic", topic}, {"payload", value}}}}.dump() + "\n");
  return std::nullopt;
}

}  // namespace pine::sources
