#include "broker/approval_desk.h"

#include <kj/debug.h>

#include "broker/event_bus.h"
#include "common/log.h"

namespace pine {

const char* toString(ApprovalState s) {
  switch (s) {
    case ApprovalState::Pending: return "pending";
    case ApprovalState::Approved: return "approved";
    case ApprovalState::Denied: return "denied";
    case ApprovalState::Timeout: return "timeout";
    case ApprovalState::Cancelled: return "cancelled";
  }
  return "cancelled";
}

std::optional<ApprovalState> parseApprovalState(const std::string& s) {
  for (auto st : {ApprovalState::Pending, ApprovalState::Approved, ApprovalState::Denied, ApprovalState::Timeout,
                  ApprovalState::Cancelled})
    if (s == toString(st)) return st;
  return std::nullopt;
}

Approvals::Approvals(store::Store& store, Feed& feed, kj::Timer& timer) : store_(store), feed_(feed), timer_(timer) {}

Approvals::~Approvals() {
  for (auto& [id, w] : waiting_)
    if (w.fulfiller->isWaiting()) w.fulfiller->fulfill(ApprovalOutcome{ApprovalState::Cancelled, false});
}

nlohmann::json Approvals::toJson(const store::ApprovalRow& a) {
  nlohmann::json args = nlohmann::json::parse(a.args, nullptr, false);
  if (args.is_discarded()) args = a.args;
  nlohmann::json j = {{"id", a.id},          {"agent", a.agent},    {"session", a.session},
                      {"task", a.taskId},    {"tool", a.tool},      {"args", args},
                      {"reason", a.reason},  {"state", a.state},    {"alwaysOffered", a.alwaysOffered},
                      {"tainted", a.tainted}, {"createdAt", isoTime(a.createdMs)}, {"expiresAt", isoTime(a.expiresMs)}};
  if (!a.alwaysScope.empty()) j["alwaysScope"] = a.alwaysScope;
  if (a.decidedMs) {
    j["decidedAt"] = isoTime(a.decidedMs);
    j["always"] = a.always;
    j["decidedBy"] = a.decidedBy;
  }
  return j;
}

kj::Promise<ApprovalOutcome> Approvals::ask(store::ApprovalRow row, int timeoutSec) {
  if (row.id.empty()) row.id = newId("a");
  row.state = toString(ApprovalState::Pending);
  row.createdMs = nowMs();
  row.expiresMs = row.createdMs + (long long)timeoutSec * 1000;
  store_.putApproval(row);  // persisted before anyone hears of it
  audit("approval.request", {{"approval", row.id}, {"agent", row.agent}, {"session", row.session}, {"task", row.taskId},
                             {"tool", row.tool}, {"reason", row.reason}, {"tainted", row.tainted}});
  feed_.publish({{"kind", "approval"}, {"task", row.taskId}, {"approval", toJson(row)}});
  return wait(row.id, (long long)timeoutSec * 1000);
}

kj::Promise<ApprovalOutcome> Approvals::await(const store::ApprovalRow& stored) {
  auto row = store_.approval(stored.id);
  if (!row) return ApprovalOutcome{ApprovalState::Cancelled, false};
  auto state = parseApprovalState(row->state).value_or(ApprovalState::Cancelled);
  if (state != ApprovalState::Pending) return ApprovalOutcome{state, row->always};
  KJ_REQUIRE(!waiting_.count(row->id), "approval is already waited on", row->id);
  audit("approval.resume", {{"approval", row->id}, {"agent", row->agent}, {"task", row->taskId}, {"tool", row->tool}});
  return wait(row->id, std::max(0LL, row->expiresMs - nowMs()));
}

kj::Promise<ApprovalOutcome> Approvals::wait(const std::string& id, long long delayMs) {
  auto paf = kj::newPromiseAndFulfiller<ApprovalOutcome>();
  Waiter w{kj::mv(paf.fulfiller)};
  w.timeout = timer_.afterDelay(delayMs * kj::MILLISECONDS).then([this, id]() {
    auto r = store_.approval(id);
    if (r && store_.decideApproval(id, toString(ApprovalState::Timeout), false, "timeout", nowMs())) {
      auto now = store_.approval(id);
      settle(id, ApprovalOutcome{ApprovalState::Timeout, false}, now ? *now : *r);
    }
  }).eagerlyEvaluate([](kj::Exception&& e) { spdlog::error("approvals: {}", e.getDescription().cStr()); });
  waiting_.emplace(id, kj::mv(w));
  return kj::mv(paf.promise);
}

void Approvals::settle(const std::string& id, ApprovalOutcome outcome, const store::ApprovalRow& row) {
  audit("approval.answer", {{"approval", id}, {"agent", row.agent}, {"session", row.session}, {"task", row.taskId},
                            {"tool", row.tool}, {"decision", toString(outcome.state)}, {"always", outcome.always}});
  feed_.publish({{"kind", "approval"}, {"task", row.taskId}, {"approval", toJson(row)}});
  auto it = waiting_.find(id);
  if (it == waiting_.end()) return;
  auto w = kj::heap<Waiter>(kj::mv(it->second));
  waiting_.erase(it);
  if (w->fulfiller->isWaiting()) w->fulfiller->fulfill(kj::mv(outcome));
  // On a timeout this runs inside w->timeout's own continuation: destroying that promise here
  // would free the code that is running (ASan caught it as a broker crash). It goes next turn.
  kj::evalLater([w = kj::mv(w)]() {}).detach([](kj::Exception&&) {});
}

std::optional<AnswerRefused> Approvals::decide(const std::string& id, bool approved, bool always,
                                               const std::string& by) {
  using Why = AnswerRefused::Why;
  auto row = store_.approval(id);
  if (!row) return AnswerRefused{Why::Unknown, "no approval request '" + id + "' (see pinectl approvals)"};
  auto state = parseApprovalState(row->state).value_or(ApprovalState::Cancelled);
  if (state == ApprovalState::Cancelled)
    return AnswerRefused{Why::Closed, "approval " + id + " is closed: " + row->decidedBy +
                                          "; nothing waits for this answer any more (see pinectl approvals)"};
  if (state != ApprovalState::Pending)
    return AnswerRefused{Why::Answered, "approval " + id + " was already answered: " + row->state};
  if (approved && always && !row->alwaysOffered)
    return AnswerRefused{Why::NotOffered,
                         "\"always\" is not offered for this request (it is configured to ask every time): approve it once"};
  ApprovalState answer = approved ? ApprovalState::Approved : ApprovalState::Denied;
  if (!store_.decideApproval(id, toString(answer), approved && always, by, nowMs()))
    return AnswerRefused{Why::Answered, "approval " + id + " was answered meanwhile"};
  auto now = store_.approval(id);
  settle(id, ApprovalOutcome{answer, approved && always}, now ? *now : *row);
  return std::nullopt;
}

void Approvals::cancelForTask(const std::string& taskId, const std::string& reason) {
  std::vector<std::string> ids;
  for (auto& a : store_.approvalsOfTask(taskId))
    if (a.state == toString(ApprovalState::Pending)) ids.push_back(a.id);
  for (auto& id : ids) {
    if (store_.decideApproval(id, toString(ApprovalState::Cancelled), false, "pine: " + reason, nowMs())) {
      auto row = store_.approval(id);
      if (row) settle(id, ApprovalOutcome{ApprovalState::Cancelled, false}, *row);
    }
  }
}

void Approvals::expireOverdue() {
  long long now = nowMs();
  for (auto& a : store_.approvals(true, 10000))
    if (a.expiresMs && a.expiresMs <= now &&
        store_.decideApproval(a.id, toString(ApprovalState::Timeout), false, "timeout", now))
      audit("approval.answer", {{"approval", a.id}, {"agent", a.agent}, {"tool", a.tool}, {"decision", "timeout"}});
}

}  // namespace pine
