#include "broker/ftp_lists.h"

#include <strings.h>

#include "broker/collect_sink.h"
#include "broker/event_routing.h"
#include "broker/sources/ftp_listing.h"
#include "common/log.h"
#include "common/rpc_link.h"

namespace pine {
namespace {

constexpr size_t kMaxListing = sources::kMaxFtpListingBytes + (64 << 10);  // redaction may add a little

}  // namespace

sources::FtpServices ftpSourceServices(std::function<proto::Supervisor::Client()> supervisor, store::Store& store,
                                       EventBus& bus) {
  sources::FtpServices s;
  s.list = [supervisor](const std::string& source) {
    auto req = supervisor().listFtpRequest();
    req.setSource(source);
    auto body = std::make_shared<std::string>();
    req.setSink(kj::heap<CollectSink>(body, kMaxListing, "a listing over 4 MiB"));
    return req.send().then(
        [body](auto r) {
          sources::FtpAnswer a;
          for (auto h : r.getHeaders())
            if (strcasecmp(h.getName().cStr(), "Ftp-Listing") == 0) a.listing = h.getValue().cStr();
          a.error = r.getError();
          a.body = std::move(*body);
          return a;
        },
        [](kj::Exception&& e) {
          sources::FtpAnswer a;
          a.error = describeRemote(e);
          return a;
        });
  };
  s.fetch = [supervisor](const std::string& source, const std::string& file, long long listedSize) {
    auto req = supervisor().fetchFtpFileRequest();
    req.setSource(source);
    req.setFile(file);
    req.setListedSize(listedSize);
    return req.send().then(
        [](auto r) {
          sources::FtpFetched f;
          f.path = r.getPath();
          f.bytes = r.getBytes();
          f.sha256 = r.getSha256();
          f.error = r.getError();
          return f;
        },
        [](kj::Exception&& e) {
          sources::FtpFetched f;
          f.error = describeRemote(e);
          return f;
        });
  };
  s.publish = [&bus](sources::Draft d) { return bus.publish(sourceEvent(std::move(d))).ignoreResult(); };
  s.recall = [&store](const std::string& source) { return store.sourceStates(source); };
  s.remember = [&store](const std::string& source, const std::string& key, const std::string& value) {
    store.putSourceState(source, key, value, nowMs());
  };
  s.forget = [&store](const std::string& source, const std::string& key) { store.removeSourceState(source, key); };
  // Events are counted once, by the router, as each is published (countEvent).
  s.looked = [&store](const std::string& source, const std::string& found) { store.noteSourceLook(source, nowMs(), found); };
  s.failed = [&store](const std::string& source, const std::string& error) {
    store.noteSourceError(source, nowMs(), error);
  };
  return s;
}

}  // namespace pine
