#include "broker/schedule_timers.h"

#include "schedule/next_run.h"
#include "common/log.h"

namespace pine {

ScheduleTimers::ScheduleTimers(kj::Timer& timer, store::Store& store, const std::shared_ptr<const config::Home>& config,
                               Submit submit, kj::TaskSet& background)
    : timer_(timer), store_(store), config_(config), submit_(std::move(submit)), background_(background),
      startedMs_(nowMs()) {}

std::optional<long long> ScheduleTimers::nextRunMs(const config::Schedule& s, std::string* error) const {
  std::string why;
  auto next = schedule::nextRunMs(s, store_.lastRun(s.name).value_or(0), startedMs_, nowMs(), &why);
  if (error) *error = why;
  return next;
}

void ScheduleTimers::armAll() {
  ++generation_;
  for (auto& s : config_->pine.schedules) arm(s);
}

void ScheduleTimers::arm(const config::Schedule& s) {
  std::string error;
  auto next = nextRunMs(s, &error);
  if (!next) {
    if (!error.empty()) spdlog::error("schedule {}: {}", s.name, error);
    return;
  }
  long long delay = std::max<long long>(0, *next - nowMs());
  unsigned generation = generation_;
  config::Schedule copy = s;
  long long due = *next;
  background_.add(timer_.afterDelay(delay * kj::MILLISECONDS).then([this, copy, generation, due]() {
    if (generation != generation_) return;  // the configuration changed: armed anew
    std::vector<std::string> agents;
    if (copy.agent == "*")
      for (auto& [id, a] : config_->agents) agents.push_back(id);
    else
      agents.push_back(copy.agent);
    std::string first;
    for (auto& a : agents) {
      RunRequest r;
      r.agent = a;
      r.session = copy.session.empty() ? "main" : copy.session;
      r.text = copy.task;
      r.trust = config::Trust::Owner;  // a schedule is the owner's wish (layer 7)
      r.origin = "schedule:" + copy.name;
      auto res = submit_(r);
      if (first.empty()) first = res.taskId;
      if (res.taskId.empty()) spdlog::warn("schedule {}: not started for {}: {}", copy.name, a, res.error);
    }
    // The monotonic timer may fire a little before the wall clock reaches `due`: the run counts as
    // the one due then, or the same slot would be found due again.
    store_.setLastRun(copy.name, std::max(nowMs(), due), first);
    audit("schedule.run", {{"schedule", copy.name}, {"task", first}});
    arm(copy);
  }));
}

}  // namespace pine
