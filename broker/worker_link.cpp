#include "broker/worker_link.h"

#include <kj/debug.h>

namespace pine {

bool isValidUtf8(std::string_view s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = (unsigned char)s[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    else if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else return false;
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      unsigned char cc = (unsigned char)s[i + k];
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // No overlong forms, no surrogates, nothing past U+10FFFF.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

void WorkerBroker::settle(bool done, std::string text) {
  KJ_REQUIRE(outcome_->isWaiting(), "this task has already ended");
  outcome_->fulfill(WorkerOutcome{done, std::move(text)});
}

kj::Promise<void> WorkerBroker::getTask(GetTaskContext context) {
  auto t = context.getResults().initTask();
  t.setId(task_.id);
  t.setAgent(task_.agent);
  t.setText(task_.text);
  t.setSandbox(task_.sandbox);
  return kj::READY_NOW;
}

kj::Promise<void> WorkerBroker::finish(FinishContext context) {
  auto answer = context.getParams().getAnswer();
  std::string_view s(answer.begin(), answer.size());
  if (s.size() > kMaxAnswerBytes || !isValidUtf8(s)) {
    std::string why = s.size() > kMaxAnswerBytes ? "the worker's answer exceeds 1 MiB" : "the worker's answer is not UTF-8";
    if (outcome_->isWaiting()) outcome_->fulfill(WorkerOutcome{false, why});
    KJ_FAIL_REQUIRE("answer refused", why);
  }
  settle(true, std::string(s));
  return kj::READY_NOW;
}

kj::Promise<void> WorkerBroker::fail(FailContext context) {
  auto reason = context.getParams().getReason();
  std::string_view s(reason.begin(), reason.size());
  std::string text(s.substr(0, kMaxFailReasonBytes));
  if (!isValidUtf8(text)) text = "(the worker's reason was not UTF-8)";
  settle(false, "worker reported: " + text);
  return kj::READY_NOW;
}

kj::Promise<void> WorkerBroker::ping(PingContext) { return kj::READY_NOW; }

}  // namespace pine
