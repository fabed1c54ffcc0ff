// The run's gate: every tool call of one run is decided here by the policy rules
// (broker/policy/), asked of the owner when they say so, and written to the audit log. A
// call that changes something is recorded in the task's journal before it is carried out;
// after a crash of the broker the resumed run's exact repeats are answered from the journal,
// and a call its interrupted run was asking about waits on that same approval. Touches the
// approvals desk, the sessions' taint and grants, and the journal, through RunServices.
#pragma once
#include <kj/async.h>

#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "broker/policy/verdict.h"
#include "broker/run_context.h"
#include "broker/worker_link.h"

namespace pine {

class RunGate {
 public:
  explicit RunGate(RunContext& run) : run_(run) {}

  // The worker asks before it runs one of its own tools (its Gate).
  kj::Promise<GateAnswer> checkWorkerTool(const std::string& tool, const std::string& argsJson);

  // A broker-side tool: allowed (the caller carries it out and ends journal step `seq`), or
  // the answer the model gets instead.
  struct BrokerCall {
    bool allowed = false;
    std::string answer;  // when not allowed
    bool isError = true;
    nlohmann::json args;
    long long seq = 0;  // the journal step to end (0: none, the call only reads)
  };
  kj::Promise<BrokerCall> checkBrokerTool(const std::string& tool, const std::string& argsJson);
  // An MCP tool (run_mcp.cpp): of this run's servers, enabled, then decided like the others.
  kj::Promise<BrokerCall> checkMcpTool(const std::string& tool, const std::string& argsJson);

  // The download tool's fetch (decided here, fetched by pined): allowed, or why not.
  kj::Promise<GateAnswer> checkDownload(const std::string& url, const std::string& path);

  void auditDecision(const policy::ToolCall& call, const std::string& decision, const std::string& reason);
  // What came of a call: one audit line (tool.result), and a progress line when it failed. by: "worker"
  // (its own report, Gate.ran) or "broker" (a tool the broker carried out).
  void auditResult(const std::string& tool, bool isError, const std::string& firstLine, const char* by);
  // Gate.ran: the worker's report of a call this gate allowed; any other report is ignored.
  void workerRan(const std::string& tool, bool isError, const std::string& firstLine);

 private:
  struct Decided {
    bool allowed = false;
    std::string reason;
    std::string approvalId;  // the approval it went ahead on
  };
  // Decides one call, asks the owner when the rules say so, audits the outcome.
  kj::Promise<Decided> decide(const policy::ToolCall& call, policy::Verdict verdict);
  // checkBrokerTool's second half, once the verdict is known: repeats, the question, the journal.
  kj::Promise<BrokerCall> decideBrokerTool(policy::ToolCall call, policy::Verdict verdict);
  // A resumed run: the approval an earlier attempt asked for this very call, not yet acted on.
  std::optional<store::ApprovalRow> earlierApproval(const policy::ToolCall& call);
  void noteTaint(const std::string& tool, const std::string& server);
  // write, edit, download in a conversation that turned tainted during this task: the instruction files
  // and git settings its sandbox still leaves writable are refused here. The refusal, or nullopt.
  std::optional<std::string> taintedWriteRefusal(const policy::ToolCall& call, const policy::SessionFacts& facts);

  RunContext& run_;
  std::set<std::string> approvalsSeen_;  // asked or awaited in this attempt
  std::multiset<std::string> unreported_;  // worker calls allowed and not yet reported (Gate.ran)
};

}  // namespace pine
