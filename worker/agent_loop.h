// The agent loop of one task: ask the model, run the tool calls it makes (the
// worker's own tools after the broker's Gate said yes, the broker's tools by
// their capabilities), hand the results back, until an answer or a limit.
#pragma once
#include <kj/async.h>

#include "proto/broker.capnp.h"

namespace pine {

// Runs the task to its end and tells the broker (finish or fail). Returns the exit code.
int runAgentTask(proto::Broker::Client broker, kj::WaitScope& ws);

}  // namespace pine
