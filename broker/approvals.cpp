#include "broker/approvals.h"

#include <kj/debug.h>

#include "broker/event_bus.h"
#include "common/log.h"

namespace pine {

Approvals::Approvals(store::Store& store, Feed& feed, kj::Timer& timer) : store_(store), feed_(feed), timer_(timer) {}

Approvals::~Approvals() {
  for (auto& [id, w] : waiting_)
    if (w.fulfiller->isWaiting()) w.fulfiller->fulfill(ApprovalOutcome{"cancelled", false});
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
  row.state = "pending";
  row.createdMs = nowMs();
  row.expiresMs = row.createdMs + (long long)timeoutSec * 1000;
  store_.putApproval(row);  // persisted before anyone hears of it
  auto paf = kj::newPromiseAndFulfiller<ApprovalOutcome>();
  std::string id = row.id;
  Waiter w{kj::mv(paf.fulfiller)};
  w.timeout = timer_.afterDelay(timeoutSec * kj::SECONDS).then([this, id]() {
    auto r = store_.approval(id);
    if (r && store_.decideApproval(id, "timeout", false, "timeout", nowMs())) {
      auto now = store_.approval(id);
      settle(id, ApprovalOutcome{"timeout", false}, now ? *now : *r);
    }
  }).eagerlyEvaluate([](kj::Exception&& e) { spdlog::error("approvals: {}", e.getDescription().cStr()); });
  waiting_.emplace(id, kj::mv(w));
  audit("approval.request", {{"approval", row.id}, {"agent", row.agent}, {"session", row.session}, {"task", row.taskId},
                             {"tool", row.tool}, {"reason", row.reason}, {"tainted", row.tainted}});
  feed_.publish({{"kind", "approval"}, {"task", row.taskId}, {"approval", toJson(row)}});
  return kj::mv(paf.promise);
}

void Approvals::settle(const std::string& id, ApprovalOutcome outcome, const store::ApprovalRow& row) {
  audit("approval.answer", {{"approval", id}, {"agent", row.agent}, {"session", row.session}, {"task", row.taskId},
                            {"tool", row.tool}, {"decision", outcome.state}, {"always", outcome.always}});
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

std::optional<std::string> Approvals::decide(const std::string& id, bool approved, bool always, const std::string& by) {
  auto row = store_.approval(id);
  if (!row) return "no approval request '" + id + "' (see pinectl approvals)";
  if (row->state != "pending") return "approval " + id + " was already answered: " + row->state;
  if (approved && always && !row->alwaysOffered)
    return "\"always\" is not offered for this request (it is configured to ask every time): approve it once";
  std::string state = approved ? "approved" : "denied";
  if (!store_.decideApproval(id, state, approved && always, by, nowMs()))
    return "approval " + id + " was answered meanwhile";
  auto now = store_.approval(id);
  settle(id, ApprovalOutcome{state, approved && always}, now ? *now : *row);
  return std::nullopt;
}

void Approvals::cancelForTask(const std::string& taskId) {
  std::vector<std::string> ids;
  for (auto& a : store_.approvals(true, 10000))
    if (a.taskId == taskId) ids.push_back(a.id);
  for (auto& id : ids) {
    if (store_.decideApproval(id, "cancelled", false, "task ended", nowMs())) {
      auto row = store_.approval(id);
      if (row) settle(id, ApprovalOutcome{"cancelled", false}, *row);
    }
  }
}

void Approvals::expireOverdue() {
  long long now = nowMs();
  for (auto& a : store_.approvals(true, 10000))
    if (a.expiresMs && a.expiresMs <= now && store_.decideApproval(a.id, "timeout", false, "timeout", now))
      audit("approval.answer", {{"approval", a.id}, {"agent", a.agent}, {"tool", a.tool}, {"decision", "timeout"}});
}

}  // namespace pine
