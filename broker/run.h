// One run of an agent: what its worker may ask of the broker (RunHost). The parts do the
// work: the gate decides every tool call (run_gate.h), the broker-side tools are carried
// out by broker_tools.h, model calls go through the relay (model_relay.h), downloads are
// decided and relayed in download.cpp. A run depends only on RunServices (run_services.h),
// which the broker implements.
#pragma once
#include <kj/async.h>

#include <memory>
#include <set>
#include <string>

#include "broker/broker_tools.h"
#include "broker/model_relay.h"
#include "broker/run_context.h"
#include "broker/run_gate.h"
#include "broker/worker_link.h"

namespace pine {

// A task resumed after a crash of the broker: its attempt and what earlier attempts spent.
struct RunResume {
  int attempt = 0;
  double costSoFar = 0;
};

class Run final : public RunHost {
 public:
  Run(RunServices& services, std::string taskId, RunRequest request, std::shared_ptr<const config::Home> config,
      std::set<std::string> tools, RunResume resume = RunResume());

  std::vector<ToolSpecText> brokerTools() override;
  kj::Promise<GateAnswer> checkTool(std::string tool, std::string argsJson) override;
  void toolRan(std::string tool, bool isError, std::string firstLine) override;
  kj::Promise<ToolAnswer> callTool(std::string tool, std::string argsJson) override;
  kj::Promise<ModelAnswer> model(ModelCallData call, proto::ModelStream::Client sink) override;
  bool mayDownload() override { return ctx_.tools.count("download") > 0; }
  // download.cpp: decided like a tool call, then fetched by pined, the bytes relayed to the worker.
  kj::Promise<DownloadAnswer> download(std::string url, std::string path, proto::FileSink::Client sink) override;
  kj::Promise<void> attachment(unsigned index, proto::FileSink::Client sink) override;

  // Whether the worker's sandbox was built for a tainted conversation (instruction files read-only).
  void setSandboxTainted(bool t) { ctx_.sandboxTainted = t; }
  // The tools the worker runs itself, as handed to it in its task.
  std::vector<ToolSpecText> workerTools() const;
  // Whether the broker carries out this tool (a broker-side row of the tool table with its handler).
  static bool carriesOut(const std::string& tool) { return BrokerTools::carriesOut(tool); }
  // Set when the run must stop (budget spent, a model repeating itself): why, in the owner's words.
  const std::string& stopReason() const { return ctx_.stopReason; }

 private:
  RunContext ctx_;
  RunGate gate_;
  BrokerTools tools_;
  ModelRelay relay_;
};

}  // namespace pine
