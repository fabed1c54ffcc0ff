#include "broker/sources/ftp_poller.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <tuple>

#include "broker/sources/ftp_listing.h"
#include "broker/sources/poll_set.h"
#include "redact/redactor.h"

namespace pine::sources {
namespace {

const std::string kFilePrefix = "f:";  // a source_state row per file seen: "f:NAME" -> "SIZE|MODIFIED"

bool sameFtpSettings(const config::Source& a, const config::Source& b) {
  return std::tie(a.url, a.intervalSec, a.usernameSecret, a.passwordSecret, a.localNetwork, a.plainFtp, a.topic,
                  a.trust) == std::tie(b.url, b.intervalSec, b.usernameSecret, b.passwordSecret, b.localNetwork,
                                       b.plainFtp, b.topic, b.trust);
}

std::string errorText(kj::Exception& e) { return e.getDescription().cStr(); }

std::string seen(const FtpEntry& e) { return std::to_string(e.size) + "|" + e.modified; }

// The file's row. Names redacted in the listing can be alike for different files ("[redacted]" for
// two names that each held the login): those are known by their size and time too, or each look
// would find the other one "changed".
std::string keyOf(const FtpEntry& e) {
  return kFilePrefix + e.name + (e.name.find(redact::kMarker) == std::string::npos ? "" : "#" + seen(e));
}

}  // namespace

FtpPoller::FtpPoller(kj::Timer& timer, config::Source source, const FtpServices& services, kj::Duration firstLook)
    : timer_(timer), source_(std::move(source)), services_(services) {
  task_ = every(firstLook).eagerlyEvaluate([name = source_.name](kj::Exception&& e) {
    spdlog::error("source '{}': stopped polling: {}", name, errorText(e));
  });
}

kj::Promise<void> FtpPoller::every(kj::Duration delay) {
  return timer_.afterDelay(delay)
      .then([this]() { return look(); })
      .then([this]() { return every(source_.intervalSec * kj::SECONDS); });
}

kj::Promise<void> FtpPoller::look() {
  // Whatever fails in one look (the store, the link to pined) is that look's error: the next one comes.
  return kj::evalNow([this]() { return services_.list(source_.name); })
      .then([this](FtpAnswer a) { return judge(std::move(a)); })
      .catch_([this](kj::Exception&& e) { fail(errorText(e)); });
}

kj::Promise<void> FtpPoller::judge(FtpAnswer answer) {
  if (!answer.error.empty()) {
    fail(answer.error);
    return kj::READY_NOW;
  }
  FtpListing listing = answer.listing == "list" ? parseUnixList(answer.body) : parseMlsd(answer.body);
  if (!listing.error.empty()) {
    fail(source_.url + ": " + listing.error);
    return kj::READY_NOW;
  }
  if (listing.refused != lastRefused_ && listing.refused > 0)
    spdlog::warn("source '{}': {} names in {} were not used ('/', control characters, not UTF-8, '.' or '..')",
                 source_.name, listing.refused, source_.url);
  lastRefused_ = listing.refused;
  auto before = std::make_shared<std::map<std::string, std::string>>(services_.recall(source_.name));
  // Files gone from the folder are forgotten: one that comes back is new again.
  std::map<std::string, bool> listed;
  for (const auto& f : listing.files) listed[keyOf(f)] = true;
  for (const auto& [key, value] : *before)
    if (key.rfind(kFilePrefix, 0) == 0 && !listed.count(key)) services_.forget(source_.name, key);
  // One event per new or changed file, each remembered once it is committed: a crash in between
  // repeats that event, never loses one.
  kj::Promise<void> chain = kj::READY_NOW;
  auto fetchFailed = std::make_shared<bool>(false);  // then the error stays the status line's
  for (auto& f : listing.files) {
    auto it = before->find(keyOf(f));
    if (it != before->end() && it->second == seen(f)) continue;
    nlohmann::json payload = {{"name", f.name}, {"change", it == before->end() ? "new" : "changed"}};
    payload["size"] = f.size >= 0 ? nlohmann::json(f.size) : nlohmann::json();
    payload["modified"] = f.modified;
    Draft d;
    d.source = source_.name;
    d.topic = source_.topic.empty() ? "ftp/" + source_.name : source_.topic;
    d.trust = source_.trust == config::Trust::Owner ? "owner" : "untrusted";
    d.payload = payload.dump();
    // pine-egress redacts the listing: a name that held the login's value (or a secret-shaped
    // string) reads "[redacted]" here, a name the server does not have. Asking for it would fail
    // at every look; the file is told as it is listed, and not fetched.
    const bool nameRedacted = f.name.find(redact::kMarker) != std::string::npos;
    if (source_.fetch && nameRedacted) {
      payload["fetched"] = false;
      payload["why"] = "its name holds a secret's value, redacted in the listing: fetch it by hand";
      d.payload = payload.dump();
      if (redactedNames_++ == 0)
        spdlog::warn("source '{}': a file whose name holds a secret's value (shown [redacted]) is told, not fetched",
                     source_.name);
    }
    chain = chain.then([this, d = std::make_shared<Draft>(std::move(d)), name = f.name, key = keyOf(f),
                        value = seen(f), size = f.size, fetchFailed, nameRedacted]() {
      kj::Promise<bool> fetched = true;
      if (source_.fetch && services_.fetch && !nameRedacted)
        fetched = services_.fetch(source_.name, name, size).then([this, d, name, fetchFailed](FtpFetched got) {
          if (!got.error.empty()) {
            *fetchFailed = true;
            fail(name + ": " + got.error);
            return false;
          }
          auto payload = nlohmann::json::parse(d->payload);
          payload["path"] = got.path;
          payload["bytes"] = got.bytes;
          payload["sha256"] = got.sha256;
          d->payload = payload.dump();
          return true;
        });
      return fetched.then([this, d, key, value](bool ok) -> kj::Promise<void> {
        if (!ok) return kj::READY_NOW;  // no event, not remembered: the next look tries again
        return services_.publish(std::move(*d)).then([this, key, value]() { services_.remember(source_.name, key, value); });
      });
    });
  }
  const size_t n = listing.files.size();
  return chain.then([this, n, fetchFailed]() {
    services_.looked(source_.name, std::to_string(n));  // the files there; a status line repeats only a number or a word
    if (*fetchFailed) return;
    if (!lastError_.empty()) spdlog::info("source '{}': {} answers again", source_.name, source_.url);
    lastError_.clear();
  });
}

void FtpPoller::fail(const std::string& error) {
  services_.failed(source_.name, error);
  if (error != lastError_) spdlog::warn("source '{}': {}", source_.name, error);
  lastError_ = error;
}

FtpPolls::FtpPolls(kj::Timer& timer, FtpServices services, kj::Duration firstLook)
    : timer_(timer), services_(std::move(services)), firstLook_(firstLook) {}

void FtpPolls::update(const std::vector<config::Source>& wanted) {
  updatePolls<FtpPoller>(polls_, wanted, "ftp", &sameFtpSettings, bool(services_), [this](const config::Source& s) {
    spdlog::info("source '{}': started (lists {} every {} s{})", s.name, s.url, s.intervalSec,
                 s.localNetwork ? ", on the local network" : "");
    return std::make_unique<FtpPoller>(timer_, s, services_, firstLook_);
  });
}

std::vector<std::string> FtpPolls::names() const { return pollNames(polls_); }

}  // namespace pine::sources
