// Schedules act in the owner's name (pine-security.md layer 7): a timer per schedule of the
// configuration in force, armed for its next run (schedule/ computes when), which
// submits an owner task for each agent it names and records the run; re-armed as a whole
// when the configuration changes. Touches the store's schedule runs and the task queue.
#pragma once
#include <kj/async-io.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "broker/run_services.h"
#include "config/model.h"

namespace pine {

class ScheduleTimers {
 public:
  using Submit = std::function<Submitted(RunRequest)>;
  ScheduleTimers(kj::Timer& timer, store::Store& store, const std::shared_ptr<const config::Home>& config,
                 Submit submit, kj::TaskSet& background);

  void armAll();  // forgets the timers armed before
  // The next run of `s` (nullopt: none; error says why when it cannot be computed).
  std::optional<long long> nextRunMs(const config::Schedule& s, std::string* error) const;

 private:
  void arm(const config::Schedule& s);
  kj::Timer& timer_;
  store::Store& store_;
  const std::shared_ptr<const config::Home>& config_;
  Submit submit_;
  kj::TaskSet& background_;
  long long startedMs_;
  unsigned generation_ = 0;
};

}  // namespace pine
