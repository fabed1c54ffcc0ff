#include "worker/task_runner.h"

#include <unistd.h>

#include <iostream>

namespace pine {

std::string answerFor(const std::string& taskId, const std::string& agent, const std::string& text,
                      const std::string& sandbox, int pid) {
  return "pine-worker " + std::to_string(pid) + " ran task " + taskId + " for agent " + agent + " (sandbox: " +
         sandbox + "; no agent loop yet) on: " + text;
}

kj::Promise<int> runWorkerTask(proto::Broker::Client broker) {
  return broker.getTaskRequest().send().then(
      [broker](auto&& response) mutable {
        auto task = response.getTask();
        std::string sandbox = task.getSandbox();
        auto req = broker.finishRequest();
        req.setAnswer(answerFor(task.getId(), task.getAgent(), task.getText(), sandbox, getpid()));
        return req.send().then([](auto&&) { return 0; });
      },
      [](kj::Exception&& e) {
        std::cerr << "pine-worker: " << e.getDescription().cStr() << "\n";
        return 1;
      });
}

}  // namespace pine
