// The recovery journal of one task's tool calls (the seeds' journal: pending, then done,
// failed or unknown). A call that changes something is recorded before it is carried out
// and settled with its outcome; the worker's own calls are settled when the worker asks
// its next question (its loop is sequential: it has their results by then). After a crash
// of the broker the resumed run is told what was done and what was cut off (resumeNote),
// and the first exact repeat of such a call is answered from the journal instead of being
// carried out again: a call whose outcome is known is not redone, one whose outcome is
// unknown is checked first, never blindly repeated. Touches only the store's task_steps.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "broker/store/store.h"

namespace pine {

enum class StepState { Pending, Done, Failed, Unknown };
const char* toString(StepState s);
std::optional<StepState> parseStepState(const std::string& s);

enum class StepSide { Worker, Broker };

class TaskJournal {
 public:
  // attempt: the task's attempt this run is (0 unless resumed after a crash of the broker).
  TaskJournal(store::Store& store, std::string taskId, int attempt);

  // Records a call about to be carried out; returns its seq (0 when it could not be stored:
  // the call still goes ahead, it is just not recoverable).
  long long begin(const std::string& tool, const nlohmann::json& args, StepSide side,
                  const std::string& approvalId = "");
  // A broker-side call's outcome.
  void end(long long seq, bool ok, const std::string& result);
  // The worker asked something again: the calls it was running have returned.
  void workerReturned();

  // An exact repeat (same tool, same arguments) of a call an earlier attempt made, answered
  // once from the journal: the text the model is given instead, and whether it reads as an error.
  struct Repeat {
    std::string text;
    bool isError = true;
  };
  std::optional<Repeat> repeatOf(const std::string& tool, const nlohmann::json& args);

  // Whether an approval was already acted on (a step went ahead on it).
  bool usedApproval(const std::string& approvalId) const;

  // What a resumed run is told about the attempts before it; "" when there is nothing to tell.
  // `waiting`: approvals of earlier attempts that no step went ahead on (pending or answered).
  static std::string resumeNote(const std::vector<store::StepRow>& steps, int attempt,
                                const std::vector<store::ApprovalRow>& waiting);

  static std::string hashOf(const nlohmann::json& args);

 private:
  store::Store& store_;
  std::string taskId_;
  int attempt_;
};

}  // namespace pine
