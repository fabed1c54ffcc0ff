#include "broker/sources/http_poller.h"

#include <spdlog/spdlog.h>

#include <tuple>

#include "broker/sources/poll_set.h"
#include "common/web_address.h"

namespace pine::sources {
namespace {

bool sameSettings(const config::Source& a, const config::Source& b) {
  return std::tie(a.url, a.intervalSec, a.tokenSecret, a.tokenHeader, a.localNetwork, a.topic, a.trust) ==
         std::tie(b.url, b.intervalSec, b.tokenSecret, b.tokenHeader, b.localNetwork, b.topic, b.trust);
}

std::string describe(kj::Exception& e) { return e.getDescription().cStr(); }

}  // namespace

HttpPoller::HttpPoller(kj::Timer& timer, config::Source source, const HttpServices& services, kj::Duration firstLook)
    : timer_(timer), source_(std::move(source)), services_(services) {
  task_ = every(firstLook).eagerlyEvaluate([name = source_.name](kj::Exception&& e) {
    spdlog::error("source '{}': stopped polling: {}", name, describe(e));
  });
}

kj::Promise<void> HttpPoller::every(kj::Duration delay) {
  return timer_.afterDelay(delay)
      .then([this]() { return look(); })
      .then([this]() { return every(source_.intervalSec * kj::SECONDS); });
}

kj::Promise<void> HttpPoller::look() {
  // Whatever fails in one look (the store, the link to pined) is that look's error: the next one comes.
  return kj::evalNow([this]() {
           return hop("", 0, PageMemory::from(services_.recall(source_.name), source_.url));
         })
      .catch_([this](kj::Exception&& e) { fail(describe(e)); });
}

kj::Promise<void> HttpPoller::hop(std::string url, int hops, PageMemory before) {
  auto fetched = services_.fetch(source_.name, url, before.etag, before.lastModified);
  return fetched.then([this, url, hops, before = std::move(before)](PageAnswer answer) mutable -> kj::Promise<void> {
    const std::string at = url.empty() ? source_.url : url;
    PageLook look = judgePage(before, at, answer);
    switch (look.verdict) {
      case PageVerdict::Failed:
        fail(look.error);
        return kj::READY_NOW;
      case PageVerdict::Redirect: {
        RedirectHop next = redirectHop(source_.url, at, look.location);
        if (!next.refusal.empty()) {
          fail(at + " answered " + std::to_string(answer.status) + ", not followed: " + next.refusal);
          return kj::READY_NOW;
        }
        if (hops + 1 > kMaxRedirects) {
          fail("more than " + std::to_string(kMaxRedirects) + " redirects from " + source_.url);
          return kj::READY_NOW;
        }
        return hop(next.url, hops + 1, std::move(before));
      }
      case PageVerdict::Unchanged:
        services_.remember(source_.name, look.memory.rows());
        worked("unchanged", 0);
        return kj::READY_NOW;
      case PageVerdict::Changed: {
        Draft d;
        d.source = source_.name;
        d.topic = source_.topic.empty() ? "http/" + source_.name : source_.topic;
        d.trust = source_.trust == config::Trust::Owner ? "owner" : "untrusted";
        d.payload = std::move(look.payload);
        // Remembered once the event is committed: a crash in between repeats the event, never loses it.
        return services_.publish(std::move(d)).then([this, memory = std::move(look.memory)]() {
          services_.remember(source_.name, memory.rows());
          worked("changed", 1);
        });
      }
    }
    return kj::READY_NOW;
  });
}

void HttpPoller::fail(const std::string& error) {
  services_.failed(source_.name, error);
  if (error != lastError_) spdlog::warn("source '{}': {}", source_.name, error);
  lastError_ = error;
}

void HttpPoller::worked(const char* found, long long events) {
  services_.looked(source_.name, found, events);
  if (!lastError_.empty()) spdlog::info("source '{}': {} answers again", source_.name, source_.url);
  lastError_.clear();
}

HttpPolls::HttpPolls(kj::Timer& timer, HttpServices services, kj::Duration firstLook)
    : timer_(timer), services_(std::move(services)), firstLook_(firstLook) {}

void HttpPolls::update(const std::vector<config::Source>& wanted) {
  updatePolls<HttpPoller>(polls_, wanted, "http", &sameSettings, bool(services_), [this](const config::Source& s) {
    spdlog::info("source '{}': started (polls {} every {} s{})", s.name, s.url, s.intervalSec,
                 s.localNetwork ? ", on the local network" : "");
    return std::make_unique<HttpPoller>(timer_, s, services_, firstLook_);
  });
}

std::vector<std::string> HttpPolls::names() const { return pollNames(polls_); }

}  // namespace pine::sources
