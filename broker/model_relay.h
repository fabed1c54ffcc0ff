// A run's model calls (proto/broker.capnp `model`): the budget checked before each, the
// provider's address and key placeholder added (pined fills the key in), the answer streamed
// to the worker while the usage is read from it and recorded as it happens. The `script`
// provider answers here, in the OpenAI wire format, so the worker's client path is the real
// one. Touches the store's usage sums (through RunServices) and pined's egress.
#pragma once
#include <kj/async.h>

#include "broker/run_context.h"
#include "broker/worker_link.h"
#include "providers/types.h"

namespace pine {

class ModelRelay {
 public:
  // taskCostSoFar: what earlier attempts of a resumed task spent (limits.budget perTask).
  ModelRelay(RunContext& run, double taskCostSoFar) : run_(run), taskCost_(taskCostSoFar) {}

  kj::Promise<ModelAnswer> call(ModelCallData call, proto::ModelStream::Client sink);

 private:
  void recordUsage(const ::pine::model::Usage& turn);
  RunContext& run_;
  double taskCost_;
  unsigned calls_ = 0;
};

}  // namespace pine
