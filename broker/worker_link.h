// The Broker capability one worker receives over its fd 3 (proto/broker.capnp),
// built for that worker's task alone. The worker is assumed hostile: every
// argument is checked, and the first answer it gives is the only one taken.
// What the worker may do beyond answering (its Gate, the broker-side tools of
// its profile, model calls) is forwarded to a RunHost: the broker's run.
#pragma once
#include <kj/async.h>
#include <kj/debug.h>

#include <string>
#include <vector>

#include "proto/broker.capnp.h"

namespace pine {

struct WorkerOutcome {
  bool done = false;   // finish() (true) or fail() (false)
  std::string text;    // the answer, or the worker's reason
  std::string transcript = "[]";  // what the run added to the conversation (JSON array)
  long long tokensIn = 0, tokensOut = 0;  // as the worker counted them (the broker counts its own)
};

// A row of the tool table as the worker is told of it.
struct ToolSpecText {
  std::string name, description, parameters;  // parameters: JSON Schema text
};

struct TaskForWorker {
  TaskForWorker(std::string id_, std::string agent_, std::string text_, std::string sandbox_)
      : id(std::move(id_)), agent(std::move(agent_)), text(std::move(text_)), sandbox(std::move(sandbox_)) {}
  std::string id, agent, text, sandbox;
  std::string session = "main", trust = "owner";
  bool tainted = false;
  std::string history = "[]", instructions;
  std::vector<ToolSpecText> workerTools;
  std::string mode = "auto", provider = "script", modelId;
  unsigned maxTokens = 4096, maxSteps = 24, timeoutSec = 1800, shellTimeoutSec = 300;
  std::string folder;
  std::vector<std::string> readRoots, writeRoots;
  std::vector<std::string> attachments;  // where the worker saves each file sent with the task
};


struct GateAnswer {
  bool allowed = false;
  std::string reason;
  bool tainted = false;
  bool outside = false;  // the result will be outside content: fenced as data by the worker
};

struct ToolAnswer {
  std::string result;
  bool isError = false;
};

struct ModelAnswer {
  unsigned status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string error;
};

struct DownloadAnswer {
  bool allowed = false;
  std::string reason;  // why not allowed
  unsigned status = 0;
  std::string location, error;
};
inline DownloadAnswer downloadRefused(std::string reason) {
  DownloadAnswer a;
  a.reason = std::move(reason);
  return a;
}

struct ModelCallData {
  std::string path;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// What the broker does on a run's behalf. Implemented by the broker's Run.
class RunHost {
 public:
  virtual ~RunHost() = default;
  virtual std::vector<ToolSpecText> brokerTools() = 0;
  virtual kj::Promise<GateAnswer> checkTool(std::string tool, std::string argsJson) = 0;
  // The worker says what came of a tool call checkTool allowed (Gate.ran).
  virtual void toolRan(std::string tool, bool isError, std::string firstLine) = 0;
  virtual kj::Promise<ToolAnswer> callTool(std::string tool, std::string argsJson) = 0;
  virtual kj::Promise<ModelAnswer> model(ModelCallData call, proto::ModelStream::Client sink) = 0;
  // Whether the run has the download tool (its worker gets the Download capability only then).
  virtual bool mayDownload() { return false; }
  virtual kj::Promise<DownloadAnswer> download(std::string, std::string, proto::FileSink::Client) {
    return downloadRefused("download is not a tool of this run");
  }
  // The bytes of a file sent with the task (TaskForWorker::attachments), streamed to sink.
  virtual kj::Promise<void> attachment(unsigned, proto::FileSink::Client) {
    return KJ_EXCEPTION(FAILED, "no files came with this task");
  }
};

constexpr const char* kCancelledByOwner = "cancelled by the owner";
constexpr size_t kMaxAnswerBytes = 1 << 20;
constexpr size_t kMaxTranscriptBytes = 8 << 20;
constexpr size_t kMaxFailReasonBytes = 4096;
constexpr size_t kMaxToolArgsBytes = 1 << 20;

class WorkerBroker final : public proto::Broker::Server {
 public:
  // host == nullptr: a worker that may only read its task and answer (tests, benchmarks).
  WorkerBroker(TaskForWorker task, kj::Own<kj::PromiseFulfiller<WorkerOutcome>> outcome, RunHost* host = nullptr)
      : task_(std::move(task)), outcome_(kj::mv(outcome)), host_(host) {}

 protected:
  kj::Promise<void> getTask(GetTaskContext context) override;
  kj::Promise<void> finish(FinishContext context) override;
  kj::Promise<void> fail(FailContext context) override;
  kj::Promise<void> ping(PingContext context) override;
  kj::Promise<void> model(ModelContext context) override;
  kj::Promise<void> attachment(AttachmentContext context) override;

 private:
  void settle(WorkerOutcome outcome);
  TaskForWorker task_;
  kj::Own<kj::PromiseFulfiller<WorkerOutcome>> outcome_;
  RunHost* host_;
};

// True when `s` is valid UTF-8 (what a worker hands back must be text).
bool isValidUtf8(std::string_view s);

}  // namespace pine
