// What a task changed in its agent's workspace, as pined's checkpoint program (checkpoint/) counts
// it once the task's worker has ended: recorded in the store (task_changes), and, for a tainted run
// that changed files, told to the owner (notice taintedChanges: how many, and their names).
#pragma once
#include <kj/async.h>
#include <nlohmann/json.hpp>

#include <string>

#include "broker/run_services.h"

namespace pine {

// Asks pined (taskChanges, no diff), records the answer and, when tainted and files changed,
// notifies the owner. A task without a checkpoint is logged, nothing recorded.
kj::Promise<void> recordTaskChanges(RunServices& services, const std::string& task, const std::string& agent,
                                    bool tainted);

// The summary line of a notice: "3 files changed: a.txt, b.txt, c.txt" (at most 20 names).
std::string changesSummary(const nlohmann::json& files);

}  // namespace pine
