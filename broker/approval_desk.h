// The approvals desk: requests persisted before anyone is asked, answered by the owner
// (control API, pinectl, Telegram) or by the timeout, which means no. A run that asked waits
// on the promise. After a crash of the broker a pending request stays bound to its task:
// the resumed run waits on the same row (await), or, when the task is not resumed, the
// request is closed with it (cancelForTask) and answering it is refused as closed.
// Touches only the store's approvals; tells the feed and the audit log.
#pragma once
#include <kj/async.h>
#include <kj/timer.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "broker/feed.h"
#include "broker/store/store.h"

namespace pine {

enum class ApprovalState { Pending, Approved, Denied, Timeout, Cancelled };
const char* toString(ApprovalState s);
std::optional<ApprovalState> parseApprovalState(const std::string& s);

struct ApprovalOutcome {
  ApprovalState state = ApprovalState::Cancelled;
  bool always = false;
};

// Why the owner's answer was not taken.
struct AnswerRefused {
  enum class Why { Unknown, Answered, Closed, NotOffered } why;
  std::string message;  // what, and what to do instead
};

class Approvals {
 public:
  Approvals(store::Store& store, Feed& feed, kj::Timer& timer);
  ~Approvals();

  // Stores `row` (id, createdMs and expiresMs filled in from timeoutSec), tells listeners, waits for the answer.
  kj::Promise<ApprovalOutcome> ask(store::ApprovalRow row, int timeoutSec);
  // Waits on a request that was stored before (a run resumed after a crash of the broker): its
  // answer if it has one, else the owner's answer or the rest of its time.
  kj::Promise<ApprovalOutcome> await(const store::ApprovalRow& row);
  // The owner's answer, or why it cannot be taken (unknown id, already answered, closed with its
  // task, "always" where it is not offered).
  std::optional<AnswerRefused> decide(const std::string& id, bool approved, bool always, const std::string& by);
  // Requests of a task that ended without an answer to them: closed, saying why.
  void cancelForTask(const std::string& taskId, const std::string& reason = "the task ended");
  // Pending requests whose time ran out while the broker was down.
  void expireOverdue();

  static nlohmann::json toJson(const store::ApprovalRow& a);

 private:
  kj::Promise<ApprovalOutcome> wait(const std::string& id, long long delayMs);
  void settle(const std::string& id, ApprovalOutcome outcome, const store::ApprovalRow& row);
  store::Store& store_;
  Feed& feed_;
  kj::Timer& timer_;
  struct Waiter {
    kj::Own<kj::PromiseFulfiller<ApprovalOutcome>> fulfiller;
    kj::Promise<void> timeout = nullptr;
  };
  std::map<std::string, Waiter> waiting_;
};

}  // namespace pine
