// The Broker capability one worker receives over its fd 3 (proto/broker.capnp),
// built for that worker's task alone. The worker is assumed hostile: every
// argument is checked, and the first answer it gives is the only one taken.
#pragma once
#include <kj/async.h>

#include <string>

#include "proto/broker.capnp.h"

namespace pine {

struct WorkerOutcome {
  bool done = false;   // finish() (true) or fail() (false)
  std::string text;    // the answer, or the worker's reason
};

struct TaskForWorker {
  std::string id, agent, text, sandbox;
};

constexpr size_t kMaxAnswerBytes = 1 << 20;
constexpr size_t kMaxFailReasonBytes = 4096;

class WorkerBroker final : public proto::Broker::Server {
 public:
  WorkerBroker(TaskForWorker task, kj::Own<kj::PromiseFulfiller<WorkerOutcome>> outcome)
      : task_(std::move(task)), outcome_(kj::mv(outcome)) {}

 protected:
  kj::Promise<void> getTask(GetTaskContext context) override;
  kj::Promise<void> finish(FinishContext context) override;
  kj::Promise<void> fail(FailContext context) override;
  kj::Promise<void> ping(PingContext context) override;

 private:
  void settle(bool done, std::string text);
  TaskForWorker task_;
  kj::Own<kj::PromiseFulfiller<WorkerOutcome>> outcome_;
};

// True when `s` is valid UTF-8 (what a worker hands back must be text).
bool isValidUtf8(std::string_view s);

}  // namespace pine
