#include "broker/sources/inbox.h"

namespace pine::sources {

void Inbox::push(InboxItem item) {
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back(std::move(item));
    wake = kj::mv(waiter_);
  }
  if (wake) wake->fulfill();
}

void Inbox::log(uint64_t client, spdlog::level::level_enum level, std::string text) {
  InboxItem item;
  item.client = client;
  item.isLog = true;
  item.level = level;
  item.text = std::move(text);
  push(std::move(item));
}

std::vector<InboxItem> Inbox::takeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(items_, {});
}

kj::Promise<std::vector<InboxItem>> Inbox::next() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (items_.empty()) {
      auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
      waiter_ = kj::mv(paf.fulfiller);
      return paf.promise.then([this]() { return takeAll(); });
    }
  }
  return takeAll();
}

}  // namespace pine::sources
