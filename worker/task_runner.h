// What a worker does with its task. Until the agent loop lands (issue 6) the
// worker has no model and no tools: it acknowledges the task it was given and
// reports which sandbox it ran in, so the whole path is exercised for real.
#pragma once
#include <kj/async.h>

#include <string>

#include "proto/broker.capnp.h"

namespace pine {

// Asks the broker for the task, answers it, and resolves to the process exit code.
kj::Promise<int> runWorkerTask(proto::Broker::Client broker);

// The answer given to a task (pure, so it can be tested without processes).
std::string answerFor(const std::string& taskId, const std::string& agent, const std::string& text,
                      const std::string& sandbox, int pid);

}  // namespace pine
