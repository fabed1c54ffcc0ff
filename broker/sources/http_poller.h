// `http` sources: each wanted one looks at its address soon after it starts and then every
// intervalSec (at least 60, config/schema.cpp). The request itself is pined's (pollSource: it
// holds the token and decides where the request may go); here the answers are judged
// (page_change.h), redirects followed on the same scheme, host and port only (at most 5,
// each a new request that pined and egress check again), one event committed per change,
// and what was seen remembered in the store through HttpServices. Event-loop thread only.
#pragma once
#include <kj/async-io.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker/sources/draft.h"
#include "broker/sources/page_change.h"
#include "config/model.h"

namespace pine::sources {

// What the pollers need of the broker; unset (no fetch) in tests of the other sources.
struct HttpServices {
  // One GET through pined: url empty for the configured address, else a redirect's target.
  std::function<kj::Promise<PageAnswer>(const std::string& source, const std::string& url, const std::string& etag,
                                        const std::string& lastModified)>
      fetch;
  std::function<kj::Promise<void>(Draft)> publish;  // resolves once the event is committed
  std::function<std::map<std::string, std::string>(const std::string& source)> recall;
  std::function<void(const std::string& source, const std::map<std::string, std::string>& rows)> remember;
  std::function<void(const std::string& source, const std::string& found, long long events)> looked;
  std::function<void(const std::string& source, const std::string& error)> failed;
  explicit operator bool() const { return fetch != nullptr; }
};

constexpr int kMaxRedirects = 5;

class HttpPoller {
 public:
  HttpPoller(kj::Timer& timer, config::Source source, const HttpServices& services, kj::Duration firstLook);
  HttpPoller(const HttpPoller&) = delete;
  HttpPoller& operator=(const HttpPoller&) = delete;
  const config::Source& source() const { return source_; }

 private:
  kj::Promise<void> every(kj::Duration delay);
  kj::Promise<void> look();
  kj::Promise<void> hop(std::string url, int hops, PageMemory before);
  void fail(const std::string& error);
  void worked(const char* found, long long events);

  kj::Timer& timer_;
  config::Source source_;
  const HttpServices& services_;
  std::string lastError_;               // logged once per change, not on every look
  kj::Promise<void> task_ = nullptr;    // last: cancelled before the rest goes
};

// The running pollers, started and stopped as the wanted set changes.
class HttpPolls {
 public:
  HttpPolls(kj::Timer& timer, HttpServices services, kj::Duration firstLook = 1 * kj::SECONDS);
  // Starts the wanted http sources not polled yet, stops the rest and those whose settings changed.
  void update(const std::vector<config::Source>& wanted);
  bool has(const std::string& name) const { return polls_.count(name) > 0; }
  std::vector<std::string> names() const;

 private:
  kj::Timer& timer_;
  HttpServices services_;
  kj::Duration firstLook_;
  std::map<std::string, std::unique_ptr<HttpPoller>> polls_;
};

}  // namespace pine::sources
