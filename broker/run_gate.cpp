#include "broker/run_gate.h"

#include "broker/approval_desk.h"
#include "broker/broker_tools.h"
#include "broker/event_bus.h"
#include "broker/policy/profile.h"
#include "broker/policy/schedules.h"
#include "broker/policy/setup_rules.h"
#include "broker/policy/taint.h"
#include "broker/policy/topics.h"
#include "broker/run_mcp.h"
#include "broker/source_type_tool.h"
#include "common/log.h"
#include "common/outside_text.h"
#include "common/refusal.h"
#include "common/tool_table.h"
#include "sandbox/guard/bash_guard.h"
#include "sandbox/jail/name_rules.h"

namespace pine {
namespace {

std::string clipText(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

// The first line of a tool's result, at most 200 bytes cut on a character's boundary: the progress
// line and the audit log say what came of a call, the conversation has the whole of it.
std::string firstLineOf(const std::string& result) {
  std::string line = result.substr(0, result.find('\n'));
  if (line.size() > 200) {
    size_t n = 200;
    while (n > 0 && (static_cast<unsigned char>(line[n]) & 0xC0) == 0x80) --n;
    line = line.substr(0, n) + "...";
  }
  return line;
}

// Whether a call of a built-in tool only reads (nothing to journal, nothing to redo).
bool onlyReads(const std::string& tool, const nlohmann::json& args) {
  const auto* row = tooltable::findTool(tool);
  return row != nullptr && tooltable::readsOnly(*row, args);
}

}  // namespace

void RunGate::auditDecision(const policy::ToolCall& call, const std::string& decision, const std::string& reason) {
  nlohmann::json f = {{"agent", run_.req.agent},   {"session", run_.req.session}, {"task", run_.taskId},
                      {"tool", call.tool},         {"trust", trustName(run_.req.trust)},
                      {"tainted", run_.tainted()}, {"decision", decision},       {"args", clipText(call.args.dump(), 2048)}};
  if (!call.server.empty()) f["server"] = call.server;
  if (!reason.empty()) f["reason"] = reason;
  if (run_.attempt) f["attempt"] = run_.attempt;
  audit("tool.decision", f);  // secret-shaped strings are redacted by the log filter
  run_.services.progress(run_.taskId, call.tool + ": " + decision);
}

void RunGate::auditResult(const std::string& tool, bool isError, const std::string& firstLine, const char* by) {
  std::string line = stripTerminalControls(firstLineOf(firstLine));
  nlohmann::json f = {{"agent", run_.req.agent}, {"session", run_.req.session}, {"task", run_.taskId},
                      {"tool", tool},            {"ok", !isError},              {"result", line},
                      {"by", by}};
  audit("tool.result", f);
  if (isError) run_.services.progress(run_.taskId, tool + ": failed: " + line);
}

void RunGate::workerRan(const std::string& tool, bool isError, const std::string& firstLine) {
  // Only a call this gate allowed and not yet reported: a worker cannot fill the audit log with reports.
  auto it = unreported_.find(tool);
  if (it == unreported_.end()) {
    // A refused download reports too (the worker cannot tell its refusal from a failure).
    spdlog::debug("task {}: a report of a '{}' call that was not allowed, or reported already: ignored", run_.taskId,
                  tool.substr(0, 64));
    return;
  }
  unreported_.erase(it);
  auditResult(tool, isError, firstLine, "worker");
}

void RunGate::noteTaint(const std::string& tool, const std::string& server) {
  if (!policy::toolCallMarksTaint(run_.config->pine.security.taint)) return;
  if (policy::toolTaints(*run_.config, run_.agent(), tool, server))
    run_.services.sessions().markTainted(run_.req.agent, run_.req.session,
                                         "the conversation used " + tool + ", which returns outside content");
}

std::optional<store::ApprovalRow> RunGate::earlierApproval(const policy::ToolCall& call) {
  if (run_.attempt == 0) return std::nullopt;
  std::string args = call.args.dump();
  for (auto& a : run_.services.store().approvalsOfTask(run_.taskId)) {
    if (approvalsSeen_.count(a.id) || a.tool != call.tool || a.args != args) continue;
    if (a.state == toString(ApprovalState::Cancelled) || run_.journal.usedApproval(a.id)) continue;
    approvalsSeen_.insert(a.id);
    return a;
  }
  return std::nullopt;
}

kj::Promise<RunGate::Decided> RunGate::decide(const policy::ToolCall& call, policy::Verdict verdict) {
  using policy::Decision;
  if (verdict.decision == Decision::Allow) {
    auditDecision(call, "allowed", verdict.reason);
    noteTaint(call.tool, call.server);
    return Decided{true, verdict.reason, ""};
  }
  if (verdict.decision == Decision::Refuse) {
    auditDecision(call, "refused", verdict.reason);
    return Decided{false, withAskHint("refused: " + verdict.reason), ""};
  }
  int timeout = run_.config->pine.security.approvalTimeout;
  store::ApprovalRow row;
  kj::Promise<ApprovalOutcome> answered = nullptr;
  if (auto earlier = earlierApproval(call)) {
    // Asked before pine's broker restarted: the owner answers that request, not a second one.
    row = *earlier;
    auditDecision(call, "asked", "the approval " + row.id + " asked before pine's broker restarted");
    answered = run_.services.approvals().await(row);
  } else {
    auditDecision(call, "asked", verdict.reason);
    row.agent = run_.req.agent;
    row.session = run_.req.session;
    row.taskId = run_.taskId;
    row.tool = call.tool;
    row.args = call.args.dump();
    row.reason = verdict.reason;
    row.alwaysOffered = verdict.alwaysOffered;
    row.alwaysScope = verdict.alwaysScope;
    row.tainted = run_.tainted();
    row.id = newId("a");
    approvalsSeen_.insert(row.id);
    run_.services.notifyOwner(run_.req.agent, "waiting for your approval: " + call.tool + " (" + verdict.reason + ")",
                              run_.taskId, "approval");
    answered = run_.services.approvals().ask(row, timeout);
  }
  return answered.then([this, call, row, timeout](ApprovalOutcome o) {
    switch (o.state) {
      case ApprovalState::Approved:
        auditDecision(call, "approved", o.always ? "always in this conversation" : "once");
        if (o.always && !row.alwaysScope.empty())
          run_.services.sessions().addGrant(run_.req.agent, run_.req.session, "always", row.alwaysScope, row.tainted);
        noteTaint(call.tool, call.server);
        return Decided{true, "approved by the owner", row.id};
      case ApprovalState::Timeout:
        auditDecision(call, "timed_out", "no answer within " + std::to_string(timeout) + " s");
        return Decided{false,
                       "not approved: the owner did not answer within " + std::to_string(timeout) +
                           " s. Do not retry; report that this action needs the owner's approval.",
                       ""};
      case ApprovalState::Denied:
      case ApprovalState::Pending:
      case ApprovalState::Cancelled:
        break;
    }
    auditDecision(call, o.state == ApprovalState::Denied ? "denied" : "cancelled", "");
    return Decided{false,
                   "not approved: the owner denied " + call.tool +
                       ". Do not retry or look for another way; report this to the owner.",
                   ""};
  });
}

std::optional<std::string> RunGate::taintedWriteRefusal(const policy::ToolCall& call,
                                                        const policy::SessionFacts& facts) {
  if (!facts.tainted || run_.sandboxTainted) return std::nullopt;
  if (call.tool != "write" && call.tool != "edit" && call.tool != "download") return std::nullopt;
  // The worker's own jail switches at once, but the worker is not trusted to, so the broker refuses
  // instruction files and git settings itself until the next task's sandbox protects them.
  static const sandbox::NameRules rules = sandbox::NameRules::defaults(true);
  std::string path = call.args.is_object() && call.args.contains("path") && call.args["path"].is_string()
                         ? call.args["path"].get<std::string>() : "";
  while (path.rfind("./", 0) == 0) path.erase(0, 2);
  size_t first = path.find_first_not_of('/');
  std::string rel = first == std::string::npos ? "" : path.substr(first);
  bool refuse = rel.empty() || rel.find("..") != std::string::npos;
  if (!refuse) {
    try {
      refuse = rules.refusing(rel, true) != nullptr;
    } catch (std::exception&) {
      refuse = true;
    }
  }
  if (!refuse) return std::nullopt;
  std::string why = "the conversation read outside content during this task: instruction files and git "
                    "settings are read-only for it now";
  auditDecision(call, "refused", why);
  return why;
}

kj::Promise<GateAnswer> RunGate::checkWorkerTool(const std::string& tool, const std::string& argsJson) {
  auto args = nlohmann::json::parse(argsJson, nullptr, false);
  policy::ToolCall call{tool, "", args.is_discarded() ? nlohmann::json(argsJson) : args, false};
  run_.journal.workerReturned();  // the worker asks again: the calls it ran have returned
  const auto* row = tooltable::findTool(tool);
  if (row == nullptr || row->side != tooltable::Side::Worker || !run_.tools.count(tool)) {
    auditDecision(call, "refused", "not in this run's profile");
    return GateAnswer{false, withAskHint("refused: '" + tool + "' is not a tool of this run")};
  }
  if (run_.breaker.tripped(tool, call.args)) {
    run_.stopReason = "the model repeated the same " + tool + " call; the run was stopped";
    auditDecision(call, "refused", run_.stopReason);
    return GateAnswer{false, "refused: " + run_.stopReason};
  }
  auto facts = run_.facts();
  if (tool == "bash" && facts.tainted && !run_.sandboxTainted) {
    // This worker's sandbox was built while the conversation was clean: its instruction files and
    // git settings are writable there. The shell waits for the next task, whose sandbox protects them.
    std::string why = "the conversation read outside content during this task; the shell is available again in the "
                      "next task, where instruction files and git settings are read-only";
    auditDecision(call, "refused", why);
    return GateAnswer{false, withAskHint("refused: " + why), true};
  }
  if (tool == "download") {
    // Decided when the worker fetches (its Download capability), not here: one decision, one question.
    auditDecision(call, "refused", "download is decided by its fetch");
    return GateAnswer{false, "refused: download goes through its own capability"};
  }
  if (auto why = taintedWriteRefusal(call, facts)) return GateAnswer{false, withAskHint("refused: " + *why), true};
  if (tool == "bash") {
    // The guard decides before anyone is asked: the owner never approves a command it then refuses.
    const auto cmd = call.args.is_object() && call.args.contains("command") && call.args["command"].is_string()
                         ? call.args["command"].get<std::string>() : std::string{};
    const auto guarded = guard::checkBashCommand(cmd);
    if (!guarded.allowed) {
      auditDecision(call, "refused", "the command guard: " + guarded.reason);
      return GateAnswer{false, withAskHint("refused by the command guard, nothing was run: " + guarded.reason)};
    }
  }
  bool reads = onlyReads(tool, call.args);
  if (!reads) {
    if (auto repeat = run_.journal.repeatOf(tool, call.args)) {
      auditDecision(call, "refused", "an exact repeat of a call made before pine's broker restarted");
      return GateAnswer{false, repeat->text, facts.tainted};
    }
  }
  return decide(call, policy::decideToolCall(*run_.config, run_.agent(), facts, call))
      .then([this, tool, reads, args = call.args](Decided d) {
        if (d.allowed && !reads) run_.journal.begin(tool, args, StepSide::Worker, d.approvalId);
        if (d.allowed) unreported_.insert(tool);
        GateAnswer a{d.allowed, d.reason};
        a.tainted = run_.tainted();
        a.outside = a.allowed && policy::toolTaints(*run_.config, run_.agent(), tool, "");
        return a;
      });
}

kj::Promise<RunGate::BrokerCall> RunGate::checkBrokerTool(const std::string& tool, const std::string& argsJson) {
  if (isMcpToolName(tool)) return checkMcpTool(tool, argsJson);
  auto args = nlohmann::json::parse(argsJson, nullptr, false);
  policy::ToolCall call{tool, "", args.is_discarded() ? nlohmann::json(argsJson) : args, false};
  run_.journal.workerReturned();
  auto refuse = [](std::string why) {
    BrokerCall c;
    c.answer = std::move(why);
    return c;
  };
  if (!run_.tools.count(tool) || !isBrokerTool(tool)) {  // the capability was never handed out; a forged name ends here
    auditDecision(call, "refused", "not in this run's profile");
    return refuse("'" + tool + "' is not a tool of this run");
  }
  if (args.is_discarded() || !args.is_object()) {
    auditDecision(call, "refused", "arguments are not a JSON object");
    return refuse("the arguments must be a JSON object");
  }
  if (run_.breaker.tripped(tool, args)) {
    run_.stopReason = "the model repeated the same " + tool + " call; the run was stopped";
    auditDecision(call, "refused", run_.stopReason);
    return refuse(run_.stopReason);
  }
  auto facts = run_.facts();
  if (auto why = checkSetupArgs(run_, tool, args)) {
    auditDecision(call, "refused", *why);
    return refuse(*why);
  }
  const auto& agent = run_.agent();
  policy::Verdict v;
  if (tool == "schedules" && !policy::builtinReadsOnly(tool, args)) {
    policy::ScheduleRequest sr;
    std::string target = args.value("for", "conversation");
    sr.target = target == "all"     ? policy::ScheduleTarget::AllAgents
                : target == "agent" ? policy::ScheduleTarget::ThisAgent  // facts.mainConversation tells main from side
                                    : policy::ScheduleTarget::ThisConversation;
    sr.agent = run_.req.agent;
    sr.intervalSec = args.contains("intervalSec") && args["intervalSec"].is_number_integer() ? args["intervalSec"].get<int>() : 0;
    sr.task = args.value("task", "");
    v = policy::decideSchedule(agent, facts, sr);
  } else if (tool == "request_access") {
    v = policy::decideRequestAccess(facts);
  } else if (tool == "add_source") {
    v = policy::decideAddSource(agent, facts, addSourceRequest(run_, args));
  } else if (tool == "add_skill") {
    v = policy::decideAddSkill(agent, facts, {args.value("name", ""), args.value("forAllAgents", false)});
  } else if (tool == "subscribe") {
    v = policy::decideSubscribe(facts);
  } else if (tool == "publish_event") {
    std::string topic = args.value("topic", "");
    if (auto why = policy::checkPublish(agent, topic)) v = policy::refused(*why);
    else v = policy::decideToolCall(*run_.config, agent, facts, call);
  } else {
    v = policy::decideToolCall(*run_.config, agent, facts, call);
  }
  if (tool == "add_source_type" && v.decision == policy::Decision::Ask) {
    // The question shows the program as pined read it; the yes is to that SHA-256 only.
    return programQuestion(run_, args).then([this, call, v](ProgramQuestion q) mutable {
      if (q.refused) {
        v = policy::refused(*q.refused);
      } else {
        v.reason += q.question;
        call.args["sha256"] = q.sha256;
      }
      return decideBrokerTool(call, v);
    });
  }
  return decideBrokerTool(call, v);
}

kj::Promise<RunGate::BrokerCall> RunGate::decideBrokerTool(policy::ToolCall call, policy::Verdict v) {
  const std::string tool = call.tool;
  const nlohmann::json args = call.args;
  bool reads = onlyReads(tool, args);
  if (!reads) {
    if (auto repeat = run_.journal.repeatOf(tool, args)) {
      auditDecision(call, "refused", "an exact repeat of a call made before pine's broker restarted");
      BrokerCall c;
      c.answer = repeat->text;
      c.isError = repeat->isError;
      return c;
    }
  }
  return decide(call, v).then([this, tool, args, reads](Decided d) {
    BrokerCall c;
    c.allowed = d.allowed;
    c.args = args;
    if (!d.allowed) {
      c.answer = d.reason;
      return c;
    }
    if (!reads) c.seq = run_.journal.begin(tool, args, StepSide::Broker, d.approvalId);
    return c;
  });
}

kj::Promise<GateAnswer> RunGate::checkDownload(const std::string& url, const std::string& path) {
  policy::ToolCall call{"download", "", nlohmann::json{{"url", url}, {"path", path}}, false};
  run_.journal.workerReturned();
  if (!run_.tools.count("download")) {  // the capability is never handed out then; checked again all the same
    auditDecision(call, "refused", "not in this run's profile");
    return GateAnswer{false, withAskHint("refused: 'download' is not a tool of this run")};
  }
  if (run_.breaker.tripped("download", call.args)) {
    run_.stopReason = "the model repeated the same download call; the run was stopped";
    auditDecision(call, "refused", run_.stopReason);
    return GateAnswer{false, "refused: " + run_.stopReason};
  }
  auto facts = run_.facts();
  if (auto why = taintedWriteRefusal(call, facts)) return GateAnswer{false, withAskHint("refused: " + *why)};
  if (auto repeat = run_.journal.repeatOf("download", call.args)) {
    auditDecision(call, "refused", "an exact repeat of a call made before pine's broker restarted");
    return GateAnswer{false, repeat->text};
  }
  return decide(call, policy::decideToolCall(*run_.config, run_.agent(), facts, call))
      .then([this, args = call.args](Decided d) {
        if (d.allowed) run_.journal.begin("download", args, StepSide::Worker, d.approvalId);
        if (d.allowed) unreported_.insert("download");
        return GateAnswer{d.allowed, d.reason};
      });
}

}  // namespace pine
