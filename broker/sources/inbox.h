// The one hand-off from a client's own thread (libmosquitto's loop) to the
// broker's event-loop thread: drafts and log lines queue here under a mutex and
// the event loop is woken through a cross-thread promise. Log lines travel too
// so that every line is written from the thread the log filter belongs to.
#pragma once
#include <kj/async.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "broker/sources/draft.h"

namespace pine::sources {

struct InboxItem {
  uint64_t client = 0;  // which start of a source sent it: items of a stopped one are dropped
  bool isLog = false;
  spdlog::level::level_enum level = spdlog::level::info;
  std::string text;  // log line
  Draft draft;
};

class Inbox {
 public:
  Inbox() = default;
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  // Any thread.
  void push(InboxItem item);
  void log(uint64_t client, spdlog::level::level_enum level, std::string text);

  // Event-loop thread only: resolves with everything queued, as soon as there is something.
  kj::Promise<std::vector<InboxItem>> next();

 private:
  std::vector<InboxItem> takeAll();

  std::mutex mu_;
  std::vector<InboxItem> items_;
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> waiter_;
};

}  // namespace pine::sources
