#include "broker/task_journal.h"


#include "broker/approval_desk.h"
#include "common/log.h"
#include "common/sha256_hex.h"

namespace pine {
namespace {

constexpr size_t kArgsKept = 16 << 10;    // what the journal keeps of a call's arguments, to show
constexpr size_t kResultKept = 16 << 10;  // and of a broker-side call's result

std::string clipped(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n) + "..."; }

// One line of the note: the tool and its arguments as the model wrote them, cut short.
std::string callWords(const store::StepRow& s) { return s.tool + " " + clipped(s.args, 300); }

}  // namespace

const char* toString(StepState s) {
  switch (s) {
    case StepState::Pending: return "pending";
    case StepState::Done: return "done";
    case StepState::Failed: return "failed";
    case StepState::Unknown: return "unknown";
  }
  return "unknown";
}

std::optional<StepState> parseStepState(const std::string& s) {
  for (auto st : {StepState::Pending, StepState::Done, StepState::Failed, StepState::Unknown})
    if (s == toString(st)) return st;
  return std::nullopt;
}

TaskJournal::TaskJournal(store::Store& store, std::string taskId, int attempt)
    : store_(store), taskId_(std::move(taskId)), attempt_(attempt) {}

std::string TaskJournal::hashOf(const nlohmann::json& args) {
  std::string text = args.dump();
  std::string hash = sha256Hex(text);
  return hash.empty() ? "sha256-failed:" + text : hash;
}

long long TaskJournal::begin(const std::string& tool, const nlohmann::json& args, StepSide side,
                             const std::string& approvalId) {
  store::StepRow s;
  s.taskId = taskId_;
  s.attempt = attempt_;
  s.tool = tool;
  std::string text = args.dump();
  s.args = text.size() <= kArgsKept ? text : nlohmann::json(clipped(text, kArgsKept)).dump();
  s.argsHash = hashOf(args);
  s.side = side == StepSide::Worker ? "worker" : "broker";
  s.state = toString(StepState::Pending);
  s.approvalId = approvalId;
  s.startedMs = nowMs();
  try {
    return store_.addStep(s);
  } catch (std::exception& e) {
    spdlog::error("task {}: journal step of {} not stored: {}", taskId_, tool, e.what());
    return 0;
  }
}

void TaskJournal::end(long long seq, bool ok, const std::string& result) {
  if (seq == 0) return;
  try {
    store_.settleStep(taskId_, seq, toString(ok ? StepState::Done : StepState::Failed), clipped(result, kResultKept),
                      nowMs());
  } catch (std::exception& e) {
    spdlog::error("task {}: journal step {} not settled: {}", taskId_, seq, e.what());
  }
}

void TaskJournal::workerReturned() {
  try {
    store_.settlePendingSteps(taskId_, "worker", toString(StepState::Done), nowMs());
  } catch (std::exception& e) {
    spdlog::error("task {}: journal not settled: {}", taskId_, e.what());
  }
}

std::optional<TaskJournal::Repeat> TaskJournal::repeatOf(const std::string& tool, const nlohmann::json& args) {
  if (attempt_ == 0) return std::nullopt;  // nothing ran before this attempt
  std::string hash = hashOf(args);
  for (auto& s : store_.steps(taskId_)) {
    if (s.attempt >= attempt_ || s.answered || s.tool != tool || s.argsHash != hash) continue;
    auto state = parseStepState(s.state).value_or(StepState::Unknown);
    if (state == StepState::Pending) continue;  // settled as unknown when the broker started
    store_.markStepAnswered(taskId_, s.seq);
    Repeat r;
    switch (state) {
      case StepState::Done:
        r.text = s.side == "broker"
                     ? "not done again: this exact call was carried out before pine's broker restarted; it returned: " +
                           s.result
                     : "not run again: this exact call already ran before pine's broker restarted (its output was "
                       "not kept). Do not repeat it; if you need its result, look at what it changed. Calling it "
                       "once more runs it.";
        r.isError = s.side != "broker";
        break;
      case StepState::Failed:
        r.text = "not done again: this exact call failed before pine's broker restarted: " + s.result;
        break;
      default:
        r.text = "not run: this exact call was interrupted when pine's broker restarted; its outcome is unknown. "
                 "Check whether it took effect (the files, state or messages it would change) before you decide "
                 "to call it again; calling it once more runs it.";
        break;
    }
    audit("task.journal_repeat", {{"task", taskId_}, {"tool", tool}, {"step", s.seq}, {"outcome", s.state}});
    return r;
  }
  return std::nullopt;
}

bool TaskJournal::usedApproval(const std::string& approvalId) const {
  for (auto& s : store_.steps(taskId_))
    if (s.approvalId == approvalId) return true;
  return false;
}

std::string TaskJournal::resumeNote(const std::vector<store::StepRow>& steps, int attempt,
                                    const std::vector<store::ApprovalRow>& waiting) {
  // `waiting`: the approvals of earlier attempts no step went ahead on (pending or answered).
  std::string lines;
  for (auto& s : steps) {
    if (s.attempt >= attempt) continue;
    auto state = parseStepState(s.state).value_or(StepState::Unknown);
    if (state == StepState::Done)
      lines += "- done: " + callWords(s) + (s.side == "broker" ? " -> " + clipped(s.result, 300) : "") +
               ". Do not repeat it.\n";
    else if (state == StepState::Failed)
      lines += "- failed: " + callWords(s) + " -> " + clipped(s.result, 300) + "\n";
    else
      lines += "- interrupted, outcome unknown: " + callWords(s) + ". Check whether it took effect before you "
               "repeat it.\n";
  }
  for (auto& a : waiting) {
    std::string call = a.tool + " " + clipped(a.args, 300);
    auto state = parseApprovalState(a.state);  // a row the store refused to hold otherwise
    if (state == ApprovalState::Pending)
      lines += "- waiting for the owner's approval: " + call +
               ". Make the same call again to wait for that answer; the owner is not asked twice.\n";
    else if (state == ApprovalState::Approved)
      lines += "- approved by the owner, not carried out yet: " + call + ". Make the same call again to carry it out.\n";
    else
      lines += "- not approved (" + a.state + "): " + call + ". Do not retry it; report it.\n";
  }
  if (lines.empty()) return "";
  return "[pine] This task was interrupted: pine's broker restarted while it ran, and it was resumed (attempt " +
         std::to_string(attempt + 1) + "). What the interrupted run did, from pine's journal:\n" + lines +
         "Continue the task from there.";
}

}  // namespace pine
