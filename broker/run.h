// One run of an agent: what its worker may ask of the broker. Every tool call
// is decided here by the policy rules (broker/policy/), asked of the owner when
// they say so, and written to the audit log; the broker-side tools (events,
// state, messages to the owner, delegation, subscriptions, access requests) are
// carried out here; model calls are relayed to the provider with the budget
// checked and the usage counted.
#pragma once
#include <kj/async.h>

#include <map>
#include <memory>
#include <set>
#include <string>

#include "broker/broker.h"
#include "broker/worker_link.h"

namespace pine {

// A tool result that is an error (the model reads it and decides what to do next).
inline ToolAnswer toolError(std::string text) { return ToolAnswer{std::move(text), true}; }

class Run final : public RunHost {
 public:
  Run(Broker& broker, std::string taskId, RunRequest request, std::shared_ptr<const config::Home> config,
      std::set<std::string> tools);

  std::vector<ToolSpecText> brokerTools() override;
  kj::Promise<GateAnswer> checkTool(std::string tool, std::string argsJson) override;
  kj::Promise<ToolAnswer> callTool(std::string tool, std::string argsJson) override;
  kj::Promise<ModelAnswer> model(ModelCallData call, proto::ModelStream::Client sink) override;
  bool mayDownload() override { return tools_.count("download") > 0; }
  // download.cpp: decided like a tool call, then fetched by pined, the bytes relayed to the worker.
  kj::Promise<DownloadAnswer> download(std::string url, std::string path, proto::FileSink::Client sink) override;

  // Whether the worker's sandbox was built for a tainted conversation (instruction files read-only).
  void setSandboxTainted(bool t) { sandboxTainted_ = t; }
  // The tools the worker runs itself, as handed to it in its task.
  std::vector<ToolSpecText> workerTools() const;
  long long tokensIn() const { return tokensIn_; }
  long long tokensOut() const { return tokensOut_; }
  double cost() const { return cost_; }
  // Whether the broker carries out this tool (a broker-side row of the tool table with its handler).
  static bool carriesOut(const std::string& tool);
  // Set when the run must stop (budget spent, a model repeating itself): why, in the owner's words.
  const std::string& stopReason() const { return stopReason_; }

 private:
  const config::AgentConfig& agent() const;
  // Decides one call, asks the owner when the rules say so, audits the outcome.
  kj::Promise<GateAnswer> decide(const policy::ToolCall& call, policy::Verdict verdict);
  void auditDecision(const policy::ToolCall& call, const std::string& decision, const std::string& reason);
  void noteTaint(const std::string& tool, const std::string& server);
  // write, edit, download in a conversation that turned tainted during this task: the instruction files
  // and git settings its sandbox still leaves writable are refused here. The refusal, or nullopt.
  std::optional<std::string> taintedWriteRefusal(const policy::ToolCall& call, const policy::SessionFacts& facts);
  kj::Promise<ToolAnswer> carryOut(const std::string& tool, const nlohmann::json& args);
  using Handler = kj::Promise<ToolAnswer> (*)(Run&, const nlohmann::json&);
  static const std::map<std::string, Handler>& handlers();
  kj::Promise<ToolAnswer> publishEvent(const nlohmann::json& args);
  kj::Promise<ToolAnswer> send(const nlohmann::json& args);
  kj::Promise<ToolAnswer> stateSet(const nlohmann::json& args);
  kj::Promise<ToolAnswer> delegate(const nlohmann::json& args);
  kj::Promise<ToolAnswer> subagent(const nlohmann::json& args);
  ToolAnswer stateGet(const nlohmann::json& args);
  ToolAnswer subscribe(const nlohmann::json& args);
  ToolAnswer schedulesList();
  // setup_tools.cpp: configuration written through pined.
  kj::Promise<ToolAnswer> scheduleCreate(const nlohmann::json& args);
  kj::Promise<ToolAnswer> addSkill(const nlohmann::json& args);
  // What a setup tool is given, checked before anyone is asked: the owner never approves a call that
  // cannot be carried out.
  std::optional<std::string> checkSetupArgs(const std::string& tool, const nlohmann::json& args) const;
  kj::Promise<ToolAnswer> createAgent(const nlohmann::json& args);
  kj::Promise<ToolAnswer> addSource(const nlohmann::json& args);
  policy::AddSourceRequest addSourceRequest(const nlohmann::json& args) const;
  // Asks pined to write one configuration file: nullopt, or why it refused.
  kj::Promise<std::optional<std::string>> changeConfig(const std::string& path, const std::string& content,
                                                       const std::string& reason);
  // Appends `entry` to the pine.yaml list `list` through changeConfig: nullopt, or why not.
  kj::Promise<std::optional<std::string>> addToPineYaml(const std::string& list, const nlohmann::json& entry,
                                                        const std::string& reason);
  kj::Promise<ToolAnswer> requestAccess(const nlohmann::json& args);
  void recordUsage(long long in, long long out);

  Broker& broker_;
  std::string taskId_;
  RunRequest req_;
  std::shared_ptr<const config::Home> config_;
  std::set<std::string> tools_;
  policy::RepeatBreaker breaker_;
  long long tokensIn_ = 0, tokensOut_ = 0;
  double cost_ = 0;
  unsigned modelCalls_ = 0;
  std::string stopReason_;
  bool sandboxTainted_ = false;
};

// Tools the broker carries out (the rest run in the worker).
bool isBrokerTool(const std::string& name);

}  // namespace pine
