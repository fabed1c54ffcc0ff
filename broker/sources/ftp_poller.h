// `ftp` sources: each wanted one looks at its remote folder soon after it starts and then every
// intervalSec (at least 60). The request is pined's (listFtp: it holds the login and decides where
// the request goes, TLS included); here the listing is parsed (ftp_listing.h), each new file and
// each changed one (size or modify time) becomes one event, and what was seen is remembered in the
// store (one row per file, written once the file's event is committed; the rows of files gone from
// the folder are dropped, so a file that comes back is new again). With fetch: true each such file
// is first fetched into the owning agent's inbox (pined's fetchFtpFile) and its event says where; a
// file that could not be fetched has no event and is not remembered, so the next look tries it
// again. Event-loop thread only.
#pragma once
#include <kj/async-io.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker/sources/draft.h"
#include "config/model.h"

namespace pine::sources {

// pined's answer to listFtp: the bytes (the listing, redacted by egress), its form, or an error.
struct FtpAnswer {
  std::string listing;  // "mlsd" or "list"
  std::string body;
  std::string error;
};

// pined's answer to fetchFtpFile: where in the owning agent's workspace the file now is, or an error.
struct FtpFetched {
  std::string path;  // inbox/ftp-<source>/<name>
  unsigned long long bytes = 0;
  std::string sha256, error;
};

// What the pollers need of the broker; unset (no list) in tests of the other sources.
struct FtpServices {
  std::function<kj::Promise<FtpAnswer>(const std::string& source)> list;
  // fetch: true: the file into the agent's inbox, before its event.
  std::function<kj::Promise<FtpFetched>(const std::string& source, const std::string& file, long long listedSize)> fetch;
  std::function<kj::Promise<void>(Draft)> publish;  // resolves once the event is committed
  std::function<std::map<std::string, std::string>(const std::string& source)> recall;
  std::function<void(const std::string& source, const std::string& key, const std::string& value)> remember;
  std::function<void(const std::string& source, const std::string& key)> forget;
  std::function<void(const std::string& source, const std::string& found)> looked;
  std::function<void(const std::string& source, const std::string& error)> failed;
  explicit operator bool() const { return list != nullptr; }
};

class FtpPoller {
 public:
  FtpPoller(kj::Timer& timer, config::Source source, const FtpServices& services, kj::Duration firstLook);
  FtpPoller(const FtpPoller&) = delete;
  FtpPoller& operator=(const FtpPoller&) = delete;
  const config::Source& source() const { return source_; }

 private:
  kj::Promise<void> every(kj::Duration delay);
  kj::Promise<void> look();
  kj::Promise<void> judge(FtpAnswer answer);
  void fail(const std::string& error);

  kj::Timer& timer_;
  config::Source source_;
  const FtpServices& services_;
  std::string lastError_;             // logged once per change, not on every look
  size_t lastRefused_ = 0;            // names refused in the last listing, likewise
  size_t redactedNames_ = 0;          // files told and not fetched: their names were redacted
  kj::Promise<void> task_ = nullptr;  // last: cancelled before the rest goes
};

// The running pollers, started and stopped as the wanted set changes.
class FtpPolls {
 public:
  FtpPolls(kj::Timer& timer, FtpServices services, kj::Duration firstLook = 1 * kj::SECONDS);
  // Starts the wanted ftp sources not polled yet, stops the rest and those whose settings changed.
  void update(const std::vector<config::Source>& wanted);
  bool has(const std::string& name) const { return polls_.count(name) > 0; }
  std::vector<std::string> names() const;

 private:
  kj::Timer& timer_;
  FtpServices services_;
  kj::Duration firstLook_;
  std::map<std::string, std::unique_ptr<FtpPoller>> polls_;
};

}  // namespace pine::sources
