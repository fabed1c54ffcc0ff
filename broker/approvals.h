// Approval requests: persisted before anyone is asked, answered by the owner
// (control API, pinectl, Telegram) or by the timeout, which means no. A run
// that asked waits on the promise; after a restart of the broker a pending
// request stays pending in the store (its run is gone) until answered or expired.
#pragma once
#include <kj/async.h>
#include <kj/timer.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "broker/feed.h"
#include "broker/store/store.h"

namespace pine {

struct ApprovalOutcome {
  std::string state;  // approved | denied | timeout | cancelled
  bool always = false;
};

class Approvals {
 public:
  Approvals(store::Store& store, Feed& feed, kj::Timer& timer);
  ~Approvals();

  // Stores `row` (id, createdMs and expiresMs filled in from timeoutSec), tells listeners, waits for the answer.
  kj::Promise<ApprovalOutcome> ask(store::ApprovalRow row, int timeoutSec);
  // The owner's answer. Returns an error text when it cannot be taken (unknown id, already answered,
  // "always" where it is not offered).
  std::optional<std::string> decide(const std::string& id, bool approved, bool always, const std::string& by);
  // Requests of a run that ended without an answer to them.
  void cancelForTask(const std::string& taskId);
  // Pending requests whose time ran out while the broker was down.
  void expireOverdue();

  static nlohmann::json toJson(const store::ApprovalRow& a);

 private:
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
